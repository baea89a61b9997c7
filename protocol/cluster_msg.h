/*
 * cluster_msg.h - Redis Cluster's bus messages in Redis 7.0.15's bytes
 * (cluster.h's clusterMsg), without I/O: decode a whole frame into a
 * struct cmsg after checking everything clusterProcessPacket checks (and
 * a little more: no field of a hostile frame is read past its end), and
 * encode one from a struct cmsg.
 *
 * A frame is a 2256-byte header ("RCmb", total length, version 1, type,
 * epochs, replication offset, sender, its slots bitmap, its primary, its
 * IP, ports, flags) and a body by type: PING/PONG/MEET carry `count`
 * gossip entries of 104 bytes and, with flag EXT_DATA, `extensions`
 * ping extensions (8-byte header: length, type; 8-byte aligned; 7.0
 * knows only the hostname); FAIL a node name; PUBLISH/PUBLISHSHARD the
 * channel and message; UPDATE an epoch, a name and a slots bitmap;
 * MODULE a module's payload; FAILOVER_AUTH_REQUEST/ACK and MFSTART
 * nothing. Every integer is big-endian.
 *
 * cellgate's own field: the sender's wall clock (ms) and, in a PONG, the
 * clock the PING it answers carried, behind a magic in the header's 30
 * reserved bytes (notused1), which Redis 7.0 neither reads nor sends; a
 * peer's clock offset and round trip come from them (bus.h).
 */
#ifndef CELLGATE_CLUSTER_MSG_H
#define CELLGATE_CLUSTER_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CMSG_NAMELEN 40             /* a node name: 40 hex characters */
#define CMSG_IPLEN 46               /* NET_IP_STR_LEN */
#define CMSG_SLOT_BYTES 2048        /* 16384 slots, one bit each */
#define CMSG_HDR_LEN 2256           /* CLUSTERMSG_MIN_LEN */
#define CMSG_GOSSIP_LEN 104         /* clusterMsgDataGossip */
#define CMSG_EXT_HDR_LEN 8          /* clusterMsgPingExt without data */
#define CMSG_PUBLISH_LEN 8          /* the two lengths before the bytes */
#define CMSG_UPDATE_LEN (8 + CMSG_NAMELEN + CMSG_SLOT_BYTES)
#define CMSG_MODULE_LEN 13          /* module id, length, type */
#define CMSG_PROTO_VER 1

enum cmsg_type {
    CMSG_PING = 0,
    CMSG_PONG = 1,
    CMSG_MEET = 2,
    CMSG_FAIL = 3,
    CMSG_PUBLISH = 4,
    CMSG_AUTH_REQUEST = 5,
    CMSG_AUTH_ACK = 6,
    CMSG_UPDATE = 7,
    CMSG_MFSTART = 8,
    CMSG_MODULE = 9,
    CMSG_PUBLISHSHARD = 10,
    CMSG_TYPE_COUNT = 11
};

/* mflags[0] */
#define CMSG_FLAG0_PAUSED 0x01      /* primary paused for a manual failover */
#define CMSG_FLAG0_FORCEACK 0x02    /* vote even though the primary is up */
#define CMSG_FLAG0_EXT_DATA 0x04    /* ping extensions follow the gossip */

#define CMSG_EXT_HOSTNAME 0

/* The node flags as the bus carries them (CLUSTER_NODE_*). */
#define CMSG_NODE_MASTER 0x001
#define CMSG_NODE_SLAVE 0x002
#define CMSG_NODE_PFAIL 0x004
#define CMSG_NODE_FAIL 0x008
#define CMSG_NODE_MYSELF 0x010
#define CMSG_NODE_HANDSHAKE 0x020
#define CMSG_NODE_NOADDR 0x040
#define CMSG_NODE_MEET 0x080
#define CMSG_NODE_MIGRATE_TO 0x100
#define CMSG_NODE_NOFAILOVER 0x200

/* One gossip entry: what the sender knows of another node. Times in
 * seconds (Redis sends ms / 1000). ip is NUL-terminated here. */
struct cmsg_gossip {
    char name[CMSG_NAMELEN];
    uint32_t ping_sent;
    uint32_t pong_received;
    char ip[CMSG_IPLEN];
    uint16_t port;
    uint16_t cport;
    uint16_t flags;
    uint16_t pport;
};

/* A message. Decoding points the variable parts into the frame (valid as
 * long as the frame is); encoding reads them from the same fields. */
struct cmsg {
    uint32_t totlen;
    uint16_t ver;
    uint16_t port;
    uint16_t type;
    uint16_t count;                 /* gossip entries (PING/PONG/MEET) */
    uint64_t current_epoch;
    uint64_t config_epoch;
    uint64_t offset;
    char sender[CMSG_NAMELEN];
    uint8_t myslots[CMSG_SLOT_BYTES];
    char slaveof[CMSG_NAMELEN];     /* all zero bytes: a primary */
    char myip[CMSG_IPLEN];          /* NUL-terminated; "" = ask the socket */
    uint16_t extensions;
    uint16_t pport;
    uint16_t cport;
    uint16_t flags;
    uint8_t state;                  /* 0 ok, 1 fail */
    uint8_t mflags[3];

    bool has_clock;                 /* cellgate's notused1 field */
    int64_t clock_ms;               /* sender's wall clock at sending */
    int64_t echo_ms;                /* PONG: the PING's clock_ms, or 0 */

    /* PING/PONG/MEET. Decoded: count entries at gossip_raw, read with
     * cmsg_gossip_get(). Encoded: count entries from gossip. */
    const uint8_t *gossip_raw;
    const struct cmsg_gossip *gossip;
    const char *hostname;           /* NULL: no hostname extension */
    size_t hostname_len;

    char about[CMSG_NAMELEN];       /* FAIL */

    const uint8_t *channel;         /* PUBLISH, PUBLISHSHARD */
    uint32_t channel_len;
    const uint8_t *message;
    uint32_t message_len;

    uint64_t update_epoch;          /* UPDATE */
    char update_name[CMSG_NAMELEN];
    uint8_t update_slots[CMSG_SLOT_BYTES];

    uint64_t module_id;             /* MODULE (ignored: no modules) */
    uint8_t module_type;
    const uint8_t *module_payload;
    uint32_t module_len;
};

enum cmsg_status {
    CMSG_OK = 0,
    CMSG_ESHORT,        /* under the header's 2256 bytes or totlen */
    CMSG_ESIG,          /* not "RCmb": Redis closes the link */
    CMSG_EVERSION,      /* not version 1: Redis ignores it */
    CMSG_ELENGTH,       /* totlen is not what the type's body needs */
    CMSG_EEXT           /* a ping extension's length is wrong */
};

/* A frame's total length from its first 8 bytes: 0 and *totlen, or
 * CMSG_ESIG (bad signature, or a length under the header's or over max:
 * close the link, as Redis's read handler does). */
enum cmsg_status cmsg_frame_len(const uint8_t first8[8], uint32_t max,
                                uint32_t *totlen);

/* Decode the whole frame buf[0..len). CMSG_OK with *m filled, else why
 * it is ignored (nothing of *m is to be used). Unknown types are OK with
 * only the header filled, as Redis takes them for well formed. */
enum cmsg_status cmsg_decode(const uint8_t *buf, size_t len, struct cmsg *m);

/* Gossip entry i (< m->count) of a decoded message. */
void cmsg_gossip_get(const struct cmsg *m, unsigned i, struct cmsg_gossip *g);

/* The bytes m encodes to (totlen). */
size_t cmsg_size(const struct cmsg *m);

/* Encode m into out, which holds cmsg_size(m) bytes; the length fields
 * (totlen, count for the gossip, extensions and EXT_DATA for a hostname)
 * are set from the parts. Returns the bytes written. */
size_t cmsg_encode(const struct cmsg *m, uint8_t *out);

/* The type's name as CLUSTER INFO's stats spell it ("ping", "pong",
 * "meet", "fail", "publish", "auth-req", "auth-ack", "update", "mfstart",
 * "module", "publishshard"), or "unknown". */
const char *cmsg_type_name(unsigned type);

/* Slot bitmaps as the bus carries them. */
static inline bool
cmsg_slot_test(const uint8_t *bitmap, unsigned slot)
{
    return (bitmap[slot >> 3] >> (slot & 7)) & 1;
}

#endif
