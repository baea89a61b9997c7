/*
 * check_main.c - runs the unit suites: every one, or those named on the
 * command line (--list names them, one a line: tests/unit/run.sh runs
 * each in a process of its own, side by side). Fork mode stays on, so a
 * crash in one test is reported and the rest still run. CK_RUN_CASE
 * (Check's own variable) picks a case.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/suites.h"

static const struct {
    const char *name;
    Suite *(*make)(void);
} suites[] = {
    { "gcra", gcra_suite },
    { "redis_gcra", redis_gcra_suite },
    { "increx", increx_suite },
    { "fixed_window", fixed_window_suite },
    { "sliding_window", sliding_window_suite },
    { "sliding_log", sliding_log_suite },
    { "tiers", tiers_suite },
    { "lease", lease_suite },
    { "conf", conf_suite },
    { "wheel", wheel_suite },
    { "store", store_suite },
    { "slots", slots_suite },
    { "num", num_suite },
    { "crc32", crc32_suite },
    { "siphash", siphash_suite },
    { "journal", journal_suite },
    { "reply", reply_suite },
    { "obuf", obuf_suite },
    { "resp", resp_suite },
    { "clock", clock_suite },
    { "cluster", cluster_suite },
    { "nodes_file", nodes_file_suite },
    { "limits", limits_suite },
    { "glob", glob_suite },
    { "tzif", tzif_suite },
    { "cmd", cmd_suite },
    { "keyspace", keyspace_suite },
    { "snapshot", snapshot_suite },
    { "multi", multi_suite },
    { "pubsub", pubsub_suite },
    { "h2", h2_suite },
    { "manifest", manifest_suite },
    { "backlog", backlog_suite },
    { "dict", dict_suite },
    { "hmap", hmap_suite },
    { "topk", topk_suite },
    { "set", set_suite },
    { "mem", mem_suite },
    { "pack", pack_suite },
    { "qlist", qlist_suite },
    { "zset", zset_suite },
    { "sha1", sha1_suite },
    { "keylog", keylog_suite },
    { "reply_read", reply_read_suite },
    { "sandbox", sandbox_suite },
    { "convert", convert_suite },
    { "lualibs", lualibs_suite },
    { "rdb_write", rdb_write_suite },
    { "rdb_read", rdb_read_suite },
    { "cluster_msg", cluster_msg_suite },
    { "rls_wire", rls_wire_suite },
    { "quota_share", quota_share_suite },
};

#define NSUITES (sizeof(suites) / sizeof(suites[0]))

static int
run(SRunner *sr)
{
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < NSUITES; i++) {
            printf("%s\n", suites[i].name);
        }
        return EXIT_SUCCESS;
    }
    for (int a = 1; a < argc; a++) {
        bool known = false;
        for (size_t i = 0; i < NSUITES && !known; i++) {
            known = strcmp(argv[a], suites[i].name) == 0;
        }
        if (!known) {
            fprintf(stderr, "check_unit: no suite %s (--list names them)\n", argv[a]);
            return EXIT_FAILURE;
        }
    }
    SRunner *sr = NULL;
    for (size_t i = 0; i < NSUITES; i++) {
        bool named = argc == 1;
        for (int a = 1; a < argc && !named; a++) {
            named = strcmp(argv[a], suites[i].name) == 0;
        }
        if (!named) {
            continue;
        }
        if (sr == NULL) {
            sr = srunner_create(suites[i].make());
        } else {
            srunner_add_suite(sr, suites[i].make());
        }
    }
    return run(sr);
}
