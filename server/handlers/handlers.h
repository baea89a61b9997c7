/*
 * handlers.h - command handlers, for the table in commands.c only.
 */
#ifndef CELLGATE_HANDLERS_H
#define CELLGATE_HANDLERS_H

#include <stddef.h>

#include "protocol/resp.h"

struct conn;

#define HANDLER(name) void name(struct conn *c, struct resp_request *req)

/* cmd_client.c */
HANDLER(cmd_client);
HANDLER(cmd_client_setname);
HANDLER(cmd_client_getname);
HANDLER(cmd_client_setinfo);
HANDLER(cmd_client_id);
HANDLER(cmd_client_list);
HANDLER(cmd_client_info);
HANDLER(cmd_client_help);
HANDLER(cmd_client_kill);
HANDLER(cmd_client_reply);
HANDLER(cmd_client_pause);
HANDLER(cmd_client_unpause);
HANDLER(cmd_client_unblock);
HANDLER(cmd_client_no_evict);
HANDLER(cmd_reset);
HANDLER(cmd_monitor);

/* cmd_pubsub.c */
HANDLER(cmd_subscribe);
HANDLER(cmd_unsubscribe);
HANDLER(cmd_psubscribe);
HANDLER(cmd_punsubscribe);
HANDLER(cmd_publish);
HANDLER(cmd_pubsub);
HANDLER(cmd_pubsub_channels);
HANDLER(cmd_pubsub_numsub);
HANDLER(cmd_pubsub_numpat);

/* cmd_script.c */
HANDLER(cmd_function);
HANDLER(cmd_function_list);
HANDLER(cmd_function_flush);
HANDLER(cmd_script);
HANDLER(cmd_script_exists);
HANDLER(cmd_script_flush);
HANDLER(cmd_script_load);
HANDLER(cmd_script_kill);
HANDLER(cmd_script_help);
HANDLER(cmd_eval);
HANDLER(cmd_evalsha);
HANDLER(cmd_eval_ro);
HANDLER(cmd_evalsha_ro);

/* cmd_memory.c */
HANDLER(cmd_memory);
HANDLER(cmd_memory_usage);
HANDLER(cmd_memory_stats);
HANDLER(cmd_memory_malloc_stats);
HANDLER(cmd_memory_purge);
HANDLER(cmd_memory_help);

/* cmd_admin.c */
HANDLER(cmd_ping);
HANDLER(cmd_echo);
HANDLER(cmd_quit);
HANDLER(cmd_select);
HANDLER(cmd_hello);
HANDLER(cmd_auth);
HANDLER(cmd_readonly);
HANDLER(cmd_dbsize);
HANDLER(cmd_flushall);
HANDLER(cmd_flushdb);
HANDLER(cmd_swapdb);
HANDLER(cmd_time);
HANDLER(cmd_shutdown);
HANDLER(cmd_save);
HANDLER(cmd_bgsave);
HANDLER(cmd_bgrewriteaof);
HANDLER(cmd_lastsave);

/* cmd_config.c */
HANDLER(cmd_config);
HANDLER(cmd_config_get);
HANDLER(cmd_config_set);
HANDLER(cmd_config_resetstat);
HANDLER(cmd_config_rewrite);
HANDLER(cmd_config_help);

/* info.c */
HANDLER(cmd_info);

/* cmd_repl.c */
HANDLER(cmd_role);
HANDLER(cmd_replicaof);
HANDLER(cmd_replconf);
HANDLER(cmd_psync);
HANDLER(cmd_sync);
HANDLER(cmd_wait);

/* cmd_multi.c */
HANDLER(cmd_multi);
HANDLER(cmd_exec);
HANDLER(cmd_discard);
HANDLER(cmd_watch);
HANDLER(cmd_unwatch);

/* cmd_cluster.c */
HANDLER(cmd_cluster);
HANDLER(cmd_cluster_keyslot);
HANDLER(cmd_cluster_myid);
HANDLER(cmd_cluster_slots);
HANDLER(cmd_cluster_shards);
HANDLER(cmd_cluster_nodes);
HANDLER(cmd_cluster_promote);
HANDLER(cmd_cluster_replicas);
HANDLER(cmd_cluster_info);
HANDLER(cmd_cluster_help);
HANDLER(cmd_cluster_reload);

/* cmd_debug.c */
HANDLER(cmd_debug);

/* cmd_slowlog.c */
HANDLER(cmd_slowlog);
HANDLER(cmd_slowlog_get);
HANDLER(cmd_slowlog_len);
HANDLER(cmd_slowlog_reset);
HANDLER(cmd_slowlog_help);

/* cmd_command.c */
HANDLER(cmd_command);
HANDLER(cmd_command_count);
HANDLER(cmd_command_info);
HANDLER(cmd_command_docs);
HANDLER(cmd_command_list);
HANDLER(cmd_command_getkeys);
HANDLER(cmd_command_getkeysandflags);
HANDLER(cmd_command_help);

/* cmd_keys.c */
HANDLER(cmd_exists);
HANDLER(cmd_del);
HANDLER(cmd_unlink);
HANDLER(cmd_touch);
HANDLER(cmd_type);
HANDLER(cmd_keys);
HANDLER(cmd_scan);
HANDLER(cmd_move);
HANDLER(cmd_rename);
HANDLER(cmd_renamenx);
HANDLER(cmd_copy);

/* cmd_expire.c */
HANDLER(cmd_expire);
HANDLER(cmd_pexpire);
HANDLER(cmd_expireat);
HANDLER(cmd_pexpireat);
HANDLER(cmd_ttl);
HANDLER(cmd_pttl);
HANDLER(cmd_expiretime);
HANDLER(cmd_pexpiretime);
HANDLER(cmd_persist);

/* cmd_string.c */
HANDLER(cmd_get);
HANDLER(cmd_set);
HANDLER(cmd_setnx);
HANDLER(cmd_setex);
HANDLER(cmd_psetex);
HANDLER(cmd_getset);
HANDLER(cmd_getdel);
HANDLER(cmd_getex);
HANDLER(cmd_mget);
HANDLER(cmd_mset);
HANDLER(cmd_msetnx);
HANDLER(cmd_incr);
HANDLER(cmd_incrby);
HANDLER(cmd_decr);
HANDLER(cmd_decrby);
HANDLER(cmd_incrbyfloat);
HANDLER(cmd_append);
HANDLER(cmd_strlen);
HANDLER(cmd_getrange);
HANDLER(cmd_setrange);

/* cmd_hash.c */
HANDLER(cmd_hset);
HANDLER(cmd_hmset);
HANDLER(cmd_hsetnx);
HANDLER(cmd_hget);
HANDLER(cmd_hmget);
HANDLER(cmd_hdel);
HANDLER(cmd_hlen);
HANDLER(cmd_hstrlen);
HANDLER(cmd_hexists);
HANDLER(cmd_hincrby);
HANDLER(cmd_hincrbyfloat);
HANDLER(cmd_hgetall);
HANDLER(cmd_hkeys);
HANDLER(cmd_hvals);
HANDLER(cmd_hscan);
/* cmd_list.c */
HANDLER(cmd_lpush);
HANDLER(cmd_rpush);
HANDLER(cmd_lpushx);
HANDLER(cmd_rpushx);
HANDLER(cmd_lpop);
HANDLER(cmd_rpop);
HANDLER(cmd_llen);
HANDLER(cmd_lindex);
HANDLER(cmd_lrange);
HANDLER(cmd_ltrim);
HANDLER(cmd_lrem);
HANDLER(cmd_lset);
HANDLER(cmd_lpos);
HANDLER(cmd_linsert);
HANDLER(cmd_lmove);

/* cmd_limit.c */
HANDLER(cmd_gcra);
HANDLER(cmd_cl_throttle);
HANDLER(cmd_rl_fixed);
HANDLER(cmd_rl_sliding);

/* cmd_increx.c */
HANDLER(cmd_increx);

/* cmd_rlcheck.c */
HANDLER(cmd_rl_check);
HANDLER(cmd_config_reload_limits);

/* cmd_log.c */
HANDLER(cmd_rl_log);
HANDLER(cmd_rl_entries);
HANDLER(cmd_rl_tiers);

/* cmd_zset.c */
HANDLER(cmd_zadd);
HANDLER(cmd_zincrby);
HANDLER(cmd_zrem);
HANDLER(cmd_zscore);
HANDLER(cmd_zmscore);
HANDLER(cmd_zcard);
HANDLER(cmd_zcount);
HANDLER(cmd_zlexcount);
HANDLER(cmd_zrange);
HANDLER(cmd_zrevrange);
HANDLER(cmd_zrangebyscore);
HANDLER(cmd_zrevrangebyscore);
HANDLER(cmd_zrangebylex);
HANDLER(cmd_zrevrangebylex);
HANDLER(cmd_zremrangebyscore);
HANDLER(cmd_zremrangebyrank);
HANDLER(cmd_zremrangebylex);
HANDLER(cmd_zrank);
HANDLER(cmd_zrevrank);
HANDLER(cmd_zpopmin);
HANDLER(cmd_zpopmax);
HANDLER(cmd_zscan);

#endif
