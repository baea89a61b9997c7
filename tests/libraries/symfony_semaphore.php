<?php
// Symfony's Semaphore component (Debian's php-symfony-semaphore, through
// php-redis), unchanged, against a Redis-protocol server at
// 127.0.0.1:<port>; prints what its user sees as one JSON line, as
// drive.mjs does for the npm libraries:
//
//     php symfony_semaphore.php <port>
//
// Its RedisStore keeps a semaphore in two sorted sets, "{resource}:time"
// (each holder's expiry) and "{resource}:weight" (each holder's weight),
// and every acquire first drops the expired holders from both: from
// :time by ZREMRANGEBYSCORE, from :weight by ZINTERSTORE of the two with
// WEIGHTS 1 0 (a fair semaphore's cleanup), then sums the weights left.
// The expired holder here is planted (as a process that died holding a
// slot leaves it), so no test waits for a clock.
use Symfony\Component\Semaphore\SemaphoreFactory;
use Symfony\Component\Semaphore\Store\RedisStore;

require_once '/usr/share/php/Symfony/Component/Semaphore/autoload.php';

$port = (int) ($argv[1] ?? 0);
if ($port <= 0) {
    fwrite(STDERR, "usage: php symfony_semaphore.php <port>\n");
    exit(2);
}
$redis = new \Redis();
$redis->connect('127.0.0.1', $port, 5.0);
$redis->setOption(\Redis::OPT_READ_TIMEOUT, 5.0);
$factory = new SemaphoreFactory(new RedisStore($redis));

// acquire() answers false when the script refuses, and throws when the
// store fails another way: both are what the user sees.
function attempt($semaphore)
{
    try {
        return $semaphore->acquire();
    } catch (\Exception $e) {
        return 'error: ' . $e->getMessage();
    }
}

// The holders' weights as the store keeps them, by weight (the members
// are random tokens).
function weights($redis, $resource)
{
    $w = array_values($redis->zRange("{{$resource}}:weight", 0, -1, true));
    sort($w);
    return $w;
}

$out = [];
// Two slots: two of three get in; a release lets the third in.
$s1 = $factory->createSemaphore('pool', 2, 1, 60.0, false);
$s2 = $factory->createSemaphore('pool', 2, 1, 60.0, false);
$s3 = $factory->createSemaphore('pool', 2, 1, 60.0, false);
$out['acquire'] = [attempt($s1), attempt($s2), attempt($s3)];
$out['again'] = attempt($s1);       // a holder acquiring again keeps its slot
$out['holders'] = [$redis->zCard('{pool}:time'), weights($redis, 'pool')];
try {
    $s1->refresh(60.0);
    $life = $s1->getRemainingLifetime();
    $out['refresh'] = [$s1->isAcquired(), $life > 55 && $life <= 60 ? 'lifetime ok' : $life];
} catch (\Exception $e) {
    $out['refresh'] = 'error: ' . $e->getMessage();
}
$s1->release();
$out['after_release'] = [$s1->isAcquired(), attempt($s3), attempt($s1)];
$ttl = $redis->ttl('{pool}:time');
$out['ttl'] = $ttl > 60 && $ttl <= 70 ? 'ttl ok' : $ttl;    // the last expiry + 10 s

// Weighted: a limit of 3; a holder of weight 2 leaves room for one of 1.
$heavy = $factory->createSemaphore('heavy', 3, 2, 60.0, false);
$heavy2 = $factory->createSemaphore('heavy', 3, 2, 60.0, false);
$light = $factory->createSemaphore('heavy', 3, 1, 60.0, false);
$light2 = $factory->createSemaphore('heavy', 3, 1, 60.0, false);
$out['weighted'] = [attempt($heavy), attempt($heavy2), attempt($light), attempt($light2)];
$out['weighted_holders'] = weights($redis, 'heavy');

// A holder whose lease ran out an hour ago still has its weight (2 of a
// limit of 2) in :weight; the next acquire drops it (ZINTERSTORE with
// the :time set, weights 1 0) and gets in.
$redis->zAdd('{dead}:time', time() - 3600, 'ghost');
$redis->zAdd('{dead}:weight', 2, 'ghost');
$fresh = $factory->createSemaphore('dead', 2, 1, 60.0, false);
$out['expired_holder'] = [attempt($fresh), weights($redis, 'dead'),
                          $redis->zScore('{dead}:weight', 'ghost')];

$s2->release();
$s3->release();
$out['released'] = [$redis->exists('{pool}:time'), $redis->exists('{pool}:weight')];

echo json_encode($out), "\n";
