/*
 * handlers.h - command handlers, for the table in commands.c only.
 *
 * A handler is named for its command with a _command suffix (SET's is
 * set_command, CLIENT KILL's client_kill_command), as Redis names its
 * setCommand: the cmd_ prefix belongs to the dispatcher (cmd.h), which a
 * handler calls and never the other way round.
 */
#ifndef CELLGATE_HANDLERS_H
#define CELLGATE_HANDLERS_H

#include <stddef.h>

#include "protocol/resp.h"

struct conn;

#define HANDLER(name) void name(struct conn *c, struct resp_request *req)

/* A handler that is a shared body with its command's settings (ZRANGE and
 * ZREVRANGEBYLEX are both zrange_generic()): one line a command, a table
 * whose rows say what sets the commands apart, where a function each
 * wrote the same five lines again. Used at file scope, without ';'. */
#define HANDLER_VARIANT(name, body, ...) \
    HANDLER(name) { body(c, req, __VA_ARGS__); }

/* A handler whose command reads no argument, a call of body(c) (FUNCTION
 * DUMP is script_function_dump()): one line a command, likewise. */
#define HANDLER_NO_ARGS(name, body) \
    HANDLER(name) { (void)req; body(c); }

/* cmd_help.c: every container's HELP (CLIENT HELP, CONFIG HELP, ...). */
HANDLER(help_command);

/* cmd_client.c */
HANDLER(client_command);
HANDLER(client_setname_command);
HANDLER(client_getname_command);
HANDLER(client_setinfo_command);
HANDLER(client_id_command);
HANDLER(client_list_command);
HANDLER(client_info_command);
HANDLER(client_kill_command);
HANDLER(client_reply_command);
HANDLER(client_pause_command);
HANDLER(client_unpause_command);
HANDLER(client_unblock_command);
HANDLER(client_no_evict_command);
HANDLER(reset_command);
HANDLER(monitor_command);

/* cmd_pubsub.c */
HANDLER(subscribe_command);
HANDLER(unsubscribe_command);
HANDLER(psubscribe_command);
HANDLER(punsubscribe_command);
HANDLER(publish_command);
HANDLER(pubsub_command);
HANDLER(pubsub_channels_command);
HANDLER(pubsub_numsub_command);
HANDLER(pubsub_numpat_command);

/* cmd_script.c */
HANDLER(function_command);
HANDLER(function_list_command);
HANDLER(function_flush_command);
HANDLER(function_load_command);
HANDLER(function_delete_command);
HANDLER(function_dump_command);
HANDLER(function_restore_command);
HANDLER(function_stats_command);
HANDLER(function_kill_command);
HANDLER(fcall_command);
HANDLER(fcall_ro_command);
HANDLER(script_command);
HANDLER(script_exists_command);
HANDLER(script_flush_command);
HANDLER(script_load_command);
HANDLER(script_kill_command);
HANDLER(eval_command);
HANDLER(evalsha_command);
HANDLER(eval_ro_command);
HANDLER(evalsha_ro_command);

/* cmd_memory.c */
HANDLER(memory_command);
HANDLER(memory_usage_command);
HANDLER(memory_stats_command);
HANDLER(memory_malloc_stats_command);
HANDLER(memory_purge_command);

/* cmd_admin.c */
HANDLER(ping_command);
HANDLER(echo_command);
HANDLER(quit_command);
HANDLER(select_command);
HANDLER(hello_command);
HANDLER(auth_command);
HANDLER(readonly_command);
HANDLER(dbsize_command);
HANDLER(flushall_command);
HANDLER(flushdb_command);
HANDLER(swapdb_command);
HANDLER(time_command);
HANDLER(shutdown_command);
HANDLER(save_command);
HANDLER(bgsave_command);
HANDLER(bgrewriteaof_command);
HANDLER(lastsave_command);

/* cmd_config.c */
HANDLER(config_command);
HANDLER(config_get_command);
HANDLER(config_set_command);
HANDLER(config_resetstat_command);
HANDLER(config_rewrite_command);

/* info.c */
HANDLER(info_command);

/* cmd_repl.c */
HANDLER(role_command);
HANDLER(replicaof_command);
HANDLER(replconf_command);
HANDLER(psync_command);
HANDLER(sync_command);
HANDLER(wait_command);

/* cmd_multi.c */
HANDLER(multi_command);
HANDLER(exec_command);
HANDLER(discard_command);
HANDLER(watch_command);
HANDLER(unwatch_command);

/* cmd_cluster.c */
HANDLER(cluster_command);
HANDLER(cluster_keyslot_command);
HANDLER(cluster_admin_command);
HANDLER(cluster_myid_command);
HANDLER(cluster_slots_command);
HANDLER(cluster_shards_command);
HANDLER(cluster_nodes_command);
HANDLER(cluster_promote_command);
HANDLER(cluster_replicas_command);
HANDLER(cluster_info_command);
HANDLER(cluster_reload_command);
HANDLER(cluster_countkeysinslot_command);
HANDLER(cluster_getkeysinslot_command);

/* cmd_debug.c */
HANDLER(debug_command);

/* cmd_slowlog.c */
HANDLER(slowlog_command);
HANDLER(slowlog_get_command);
HANDLER(slowlog_len_command);
HANDLER(slowlog_reset_command);

/* cmd_command.c */
HANDLER(command_command);
HANDLER(command_count_command);
HANDLER(command_info_command);
HANDLER(command_docs_command);
HANDLER(command_list_command);
HANDLER(command_getkeys_command);
HANDLER(command_getkeysandflags_command);

/* cmd_keys.c */
HANDLER(exists_command);
HANDLER(del_command);
HANDLER(unlink_command);
HANDLER(touch_command);
HANDLER(type_command);
HANDLER(keys_command);
HANDLER(randomkey_command);
HANDLER(scan_command);
HANDLER(move_command);
HANDLER(rename_command);
HANDLER(renamenx_command);
HANDLER(copy_command);
HANDLER(dump_command);

/* cmd_restore.c */
HANDLER(restore_command);

/* cmd_migrate.c */
HANDLER(migrate_command);

/* cmd_expire.c */
HANDLER(expire_command);
HANDLER(pexpire_command);
HANDLER(expireat_command);
HANDLER(pexpireat_command);
HANDLER(ttl_command);
HANDLER(pttl_command);
HANDLER(expiretime_command);
HANDLER(pexpiretime_command);
HANDLER(persist_command);

/* cmd_string.c */
HANDLER(get_command);
HANDLER(set_command);
HANDLER(setnx_command);
HANDLER(setex_command);
HANDLER(psetex_command);
HANDLER(getset_command);
HANDLER(getdel_command);
HANDLER(getex_command);
HANDLER(mget_command);
HANDLER(mset_command);
HANDLER(msetnx_command);
HANDLER(incr_command);
HANDLER(incrby_command);
HANDLER(decr_command);
HANDLER(decrby_command);
HANDLER(incrbyfloat_command);
HANDLER(append_command);
HANDLER(strlen_command);
HANDLER(getrange_command);
HANDLER(setrange_command);

/* cmd_hash.c */
HANDLER(hset_command);
HANDLER(hmset_command);
HANDLER(hsetnx_command);
HANDLER(hget_command);
HANDLER(hmget_command);
HANDLER(hdel_command);
HANDLER(hlen_command);
HANDLER(hstrlen_command);
HANDLER(hexists_command);
HANDLER(hincrby_command);
HANDLER(hincrbyfloat_command);
HANDLER(hgetall_command);
HANDLER(hkeys_command);
HANDLER(hvals_command);
HANDLER(hscan_command);
HANDLER(hrandfield_command);
/* cmd_list.c */
HANDLER(lpush_command);
HANDLER(rpush_command);
HANDLER(lpushx_command);
HANDLER(rpushx_command);
HANDLER(lpop_command);
HANDLER(rpop_command);
HANDLER(llen_command);
HANDLER(lindex_command);
HANDLER(lrange_command);
HANDLER(ltrim_command);
HANDLER(lrem_command);
HANDLER(lset_command);
HANDLER(lpos_command);
HANDLER(linsert_command);
HANDLER(lmove_command);
HANDLER(rpoplpush_command);
HANDLER(lmpop_command);
HANDLER(blpop_command);
HANDLER(brpop_command);
HANDLER(blmpop_command);
HANDLER(blmove_command);
HANDLER(brpoplpush_command);

/* cmd_limit.c */
HANDLER(gcra_command);
HANDLER(cl_throttle_command);
HANDLER(rl_fixed_command);
HANDLER(rl_sliding_command);

/* cmd_all.c */
HANDLER(rl_all_command);
/* RL.ALL's parts' keys, for COMMAND GETKEYS and routing (its row's
 * key_args). */
size_t rl_all_keys(const struct resp_request *req, int *idx, size_t max);

/* cmd_increx.c */
HANDLER(increx_command);

/* cmd_rlcheck.c */
HANDLER(rl_check_command);
/* RL.CHECK's counter, for COMMAND GETKEYS (its row's computed_key). */
struct textbuf;
bool rl_check_key(const struct resp_request *req, struct textbuf *key);
HANDLER(config_reload_limits_command);

/* cmd_log.c */
HANDLER(rl_log_command);
HANDLER(rl_entries_command);
HANDLER(rl_topdenied_command);
HANDLER(rl_tiers_command);

/* cmd_lease.c */
HANDLER(rl_acquire_command);
HANDLER(rl_refresh_command);
HANDLER(rl_release_command);
HANDLER(rl_leases_command);

/* cmd_zset.c */
HANDLER(zadd_command);
HANDLER(zincrby_command);
HANDLER(zrem_command);
HANDLER(zscore_command);
HANDLER(zmscore_command);
HANDLER(zcard_command);
HANDLER(zcount_command);
HANDLER(zlexcount_command);
HANDLER(zrange_command);
HANDLER(zrevrange_command);
HANDLER(zrangebyscore_command);
HANDLER(zrevrangebyscore_command);
HANDLER(zrangebylex_command);
HANDLER(zrevrangebylex_command);
HANDLER(zremrangebyscore_command);
HANDLER(zremrangebyrank_command);
HANDLER(zremrangebylex_command);
HANDLER(zrank_command);
HANDLER(zrevrank_command);
HANDLER(zpopmin_command);
HANDLER(zpopmax_command);
HANDLER(zscan_command);
HANDLER(zmpop_command);
HANDLER(bzpopmin_command);
HANDLER(bzpopmax_command);
HANDLER(bzmpop_command);

/* cmd_set.c */
HANDLER(sadd_command);
HANDLER(srem_command);
HANDLER(sismember_command);
HANDLER(smismember_command);
HANDLER(scard_command);
HANDLER(smembers_command);
HANDLER(srandmember_command);
HANDLER(spop_command);
HANDLER(smove_command);
HANDLER(sscan_command);
HANDLER(sinter_command);
HANDLER(sintercard_command);
HANDLER(sinterstore_command);
HANDLER(sunion_command);
HANDLER(sunionstore_command);
HANDLER(sdiff_command);
HANDLER(sdiffstore_command);
HANDLER(zrangestore_command);
HANDLER(zrandmember_command);

/* cmd_zalg.c */
HANDLER(zunion_command);
HANDLER(zinter_command);
HANDLER(zdiff_command);
HANDLER(zunionstore_command);
HANDLER(zinterstore_command);
HANDLER(zdiffstore_command);
HANDLER(zintercard_command);

#endif
