/*
 * check_main.c - runs every unit suite. Fork mode stays on, so a crash in
 * one test is reported and the rest still run. CK_RUN_SUITE / CK_RUN_CASE
 * (Check's own variables) pick a subset.
 */
#include <stdlib.h>

#include "tests/unit/suites.h"

int
main(void)
{
    SRunner *sr = srunner_create(gcra_suite());
    srunner_add_suite(sr, redis_gcra_suite());
    srunner_add_suite(sr, increx_suite());
    srunner_add_suite(sr, fixed_window_suite());
    srunner_add_suite(sr, sliding_window_suite());
    srunner_add_suite(sr, sliding_log_suite());
    srunner_add_suite(sr, tiers_suite());
    srunner_add_suite(sr, conf_suite());
    srunner_add_suite(sr, wheel_suite());
    srunner_add_suite(sr, store_suite());
    srunner_add_suite(sr, num_suite());
    srunner_add_suite(sr, crc32_suite());
    srunner_add_suite(sr, siphash_suite());
    srunner_add_suite(sr, journal_suite());
    srunner_add_suite(sr, reply_suite());
    srunner_add_suite(sr, obuf_suite());
    srunner_add_suite(sr, resp_suite());
    srunner_add_suite(sr, clock_suite());
    srunner_add_suite(sr, cluster_suite());
    srunner_add_suite(sr, limits_suite());
    srunner_add_suite(sr, glob_suite());
    srunner_add_suite(sr, cmd_suite());
    srunner_add_suite(sr, keyspace_suite());
    srunner_add_suite(sr, snapshot_suite());
    srunner_add_suite(sr, multi_suite());
    srunner_add_suite(sr, pubsub_suite());
    srunner_add_suite(sr, h2_suite());
    srunner_add_suite(sr, manifest_suite());
    srunner_add_suite(sr, backlog_suite());
    srunner_add_suite(sr, dict_suite());
    srunner_add_suite(sr, hmap_suite());
    srunner_add_suite(sr, mem_suite());
    srunner_add_suite(sr, pack_suite());
    srunner_add_suite(sr, qlist_suite());
    srunner_add_suite(sr, zset_suite());
    srunner_add_suite(sr, sha1_suite());
    srunner_add_suite(sr, reply_read_suite());
    srunner_add_suite(sr, sandbox_suite());
    srunner_add_suite(sr, convert_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
