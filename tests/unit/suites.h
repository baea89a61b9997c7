/* suites.h - every Check suite of the unit test runner (check_main.c). */
#ifndef CELLGATE_SUITES_H
#define CELLGATE_SUITES_H

#include <check.h>

Suite *gcra_suite(void);
Suite *redis_gcra_suite(void);
Suite *increx_suite(void);
Suite *fixed_window_suite(void);
Suite *sliding_window_suite(void);
Suite *sliding_log_suite(void);
Suite *tiers_suite(void);
Suite *lease_suite(void);
Suite *conf_suite(void);
Suite *wheel_suite(void);
Suite *store_suite(void);
Suite *slots_suite(void);
Suite *num_suite(void);
Suite *crc32_suite(void);
Suite *siphash_suite(void);
Suite *journal_suite(void);
Suite *reply_suite(void);
Suite *obuf_suite(void);
Suite *resp_suite(void);
Suite *clock_suite(void);
Suite *cluster_suite(void);
Suite *nodes_file_suite(void);
Suite *glob_suite(void);
Suite *tzif_suite(void);
Suite *cmd_suite(void);
Suite *limits_suite(void);
Suite *keyspace_suite(void);
Suite *snapshot_suite(void);
Suite *mem_suite(void);
Suite *multi_suite(void);
Suite *pubsub_suite(void);
Suite *h2_suite(void);
Suite *manifest_suite(void);
Suite *backlog_suite(void);
Suite *pack_suite(void);
Suite *zset_suite(void);
Suite *dict_suite(void);
Suite *hmap_suite(void);
Suite *topk_suite(void);
Suite *set_suite(void);
Suite *qlist_suite(void);
Suite *sha1_suite(void);
Suite *keylog_suite(void);
Suite *reply_read_suite(void);
Suite *sandbox_suite(void);
Suite *convert_suite(void);
Suite *lualibs_suite(void);
Suite *rdb_write_suite(void);
Suite *rdb_read_suite(void);
Suite *cluster_msg_suite(void);

#endif
