/*
 * fuzz_bus.c - libFuzzer driver for the cluster bus's messages
 * (protocol/cluster_msg.c), fed as a link reads them: the input is a byte
 * stream cut into frames by their first 8 bytes (cmsg_frame_len, as the
 * link's reassembly does, with its size cap); each frame is decoded, its
 * gossip entries read, and a frame that decodes is encoded again and
 * decoded once more, which must give the same message (the encoder and
 * the decoder agree on every field a frame can carry). A frame that
 * fails to decode is skipped, as the bus ignores it; a bad signature or
 * length ends the stream, as the bus closes the link.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/cluster_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FRAME_CAP (1u << 16)

static void
same_or_abort(const struct cmsg *a, const struct cmsg *b)
{
    /* count is a PING's, PONG's or MEET's: others are sent with 0 */
    bool ping = a->type <= CMSG_MEET;
    if (a->type != b->type || (ping && a->count != b->count) ||
        a->current_epoch != b->current_epoch ||
        a->config_epoch != b->config_epoch || a->offset != b->offset ||
        memcmp(a->sender, b->sender, CMSG_NAMELEN) != 0 ||
        memcmp(a->myslots, b->myslots, CMSG_SLOT_BYTES) != 0 ||
        strcmp(a->myip, b->myip) != 0 || a->flags != b->flags ||
        a->has_clock != b->has_clock || a->channel_len != b->channel_len ||
        a->message_len != b->message_len ||
        a->hostname_len != b->hostname_len ||
        (a->hostname == NULL) != (b->hostname == NULL)) {
        abort();
    }
    if (a->hostname != NULL &&
        memcmp(a->hostname, b->hostname, a->hostname_len) != 0) {
        abort();
    }
}

static void
reencode(const struct cmsg *m)
{
    struct cmsg copy = *m, back;
    struct cmsg_gossip *g = NULL;
    if (m->type > CMSG_PUBLISHSHARD || m->type == CMSG_MODULE) {
        return;
    }
    if (m->count > 0 && m->type <= CMSG_MEET) {
        g = malloc(sizeof(*g) * m->count);
        if (g == NULL) {
            return;
        }
        for (unsigned i = 0; i < m->count; i++) {
            cmsg_gossip_get(m, i, &g[i]);
        }
    }
    copy.gossip = g;
    uint8_t *out = malloc(cmsg_size(&copy));
    if (out == NULL) {
        free(g);
        return;
    }
    size_t n = cmsg_encode(&copy, out);
    if (cmsg_decode(out, n, &back) != CMSG_OK) {
        abort();
    }
    same_or_abort(m, &back);
    free(out);
    free(g);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    while (size >= 8) {
        uint32_t totlen;
        struct cmsg m;
        if (cmsg_frame_len(data, FRAME_CAP, &totlen) != CMSG_OK ||
            totlen > size) {
            return 0;
        }
        /* a copy of exactly the frame, so ASan sees any read past it */
        uint8_t *frame = malloc(totlen);
        if (frame == NULL) {
            return 0;
        }
        memcpy(frame, data, totlen);
        if (cmsg_decode(frame, totlen, &m) == CMSG_OK) {
            struct cmsg_gossip g;
            for (unsigned i = 0; m.type <= CMSG_MEET && i < m.count; i++) {
                cmsg_gossip_get(&m, i, &g);
            }
            reencode(&m);
        }
        free(frame);
        data += totlen;
        size -= totlen;
    }
    return 0;
}
