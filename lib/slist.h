/*
 * slist.h - intrusive singly linked lists: a head pointer (NULL when empty)
 * and a link field in each node, named at each use, so one node can be on
 * several lists at once (a client on the write list and the input list,
 * each through its own field). What pushes, walks and unlinks them is
 * written here once; a list that keeps a flag for "on the list" sets and
 * clears it beside these.
 *
 * The head is an lvalue (a variable or a field), evaluated more than once:
 * no side effects in it. The doubly linked lists use <sys/queue.h>'s TAILQ.
 */
#ifndef CELLGATE_SLIST_H
#define CELLGATE_SLIST_H

#include <stddef.h>

/* Put node first: O(1). */
#define SL_PUSH(head, node, link)                                           \
    do {                                                                    \
        (node)->link = (head);                                              \
        (head) = (node);                                                    \
    } while (0)

/* Take node off the list, walking to it: O(length). Nothing happens when it
 * is not there. Its own link is left as it was. */
#define SL_UNLINK(T, head, node, link)                                      \
    do {                                                                    \
        for (T **sl_p_ = &(head); *sl_p_ != NULL;                           \
             sl_p_ = &(*sl_p_)->link) {                                     \
            if (*sl_p_ == (node)) {                                         \
                *sl_p_ = (node)->link;                                      \
                break;                                                      \
            }                                                               \
        }                                                                   \
    } while (0)

/* SL_DRAIN(T, var, head, link) { body }: take the whole list (head is NULL
 * from the start, so what the body pushes on it waits for the next drain),
 * then run body once a node, as var, O(1) each. A node is off the list,
 * its link cleared, when body runs: body may push it again, free it or
 * continue; it must not break (the nodes after it would be lost). The two
 * declarations are initialised in order (C11 6.8p3): var takes the head
 * before the head is cleared. */
#define SL_DRAIN(T, var, head, link)                                        \
    for (T *var = (head), *var##_next_ = ((head) = NULL);                   \
         var != NULL && (var##_next_ = var->link, var->link = NULL, 1);     \
         var = var##_next_)

#endif
