/*
 * commands.h - the command table (commands.c), for main.c to hand to the
 * dispatcher: cmd_setup(command_table, command_count).
 */
#ifndef CELLGATE_COMMANDS_H
#define CELLGATE_COMMANDS_H

#include <stddef.h>

struct cmd;

extern struct cmd *const command_table;
extern const size_t command_count;

#endif
