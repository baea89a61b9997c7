/*
 * cluster_msg.c - Redis Cluster bus messages (cluster_msg.h): the header
 * at fixed offsets (cluster.h's static asserts), bodies by type, and the
 * checks of clusterProcessPacket made strict: Redis 7.0 trusts a frame's
 * `extensions` even without the EXT_DATA flag, reads a hostname up to a
 * NUL it never checks for, and truncates an extension's length to 16
 * bits; here each is a reason to ignore the frame, so no byte outside it
 * is ever read. Well-formed frames of a real 7.0 pass unchanged.
 */
#include <string.h>

#include "protocol/cluster_msg.h"

/* Header offsets (cluster.h). */
enum {
    OFF_SIG = 0, OFF_TOTLEN = 4, OFF_VER = 8, OFF_PORT = 10, OFF_TYPE = 12,
    OFF_COUNT = 14, OFF_CUREPOCH = 16, OFF_CFGEPOCH = 24, OFF_OFFSET = 32,
    OFF_SENDER = 40, OFF_MYSLOTS = 80, OFF_SLAVEOF = 2128, OFF_MYIP = 2168,
    OFF_EXTENSIONS = 2214, OFF_NOTUSED1 = 2216, OFF_PPORT = 2246,
    OFF_CPORT = 2248, OFF_FLAGS = 2250, OFF_STATE = 2252, OFF_MFLAGS = 2253,
    OFF_DATA = CMSG_HDR_LEN
};

/* Gossip entry offsets. */
enum {
    G_NAME = 0, G_PING = 40, G_PONG = 44, G_IP = 48, G_PORT = 94,
    G_CPORT = 96, G_FLAGS = 98, G_PPORT = 100, G_NOTUSED = 102
};

/* cellgate's clock in notused1: magic, sender's clock, echoed clock. */
static const uint8_t clock_magic[4] = {'c', 'g', 'C', '1'};
enum { CLK_MAGIC = 0, CLK_NOW = 4, CLK_ECHO = 12 };

/* ---- big-endian fields ----------------------------------------------- */

static uint16_t
rd16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t
rd32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t
rd64(const uint8_t *p)
{
    return ((uint64_t)rd32(p) << 32) | rd32(p + 4);
}

static void
wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void
wr32(uint8_t *p, uint32_t v)
{
    wr16(p, (uint16_t)(v >> 16));
    wr16(p + 2, (uint16_t)v);
}

static void
wr64(uint8_t *p, uint64_t v)
{
    wr32(p, (uint32_t)(v >> 32));
    wr32(p + 4, (uint32_t)v);
}

/* An IP field of 46 bytes as a C string: Redis keeps 45 and a NUL. */
static void
copy_ip(char *dst, const uint8_t *src)
{
    memcpy(dst, src, CMSG_IPLEN - 1);
    dst[CMSG_IPLEN - 1] = '\0';
}

/* ---- decoding -------------------------------------------------------- */

enum cmsg_status
cmsg_frame_len(const uint8_t first8[8], uint32_t max, uint32_t *totlen)
{
    uint32_t len = rd32(first8 + OFF_TOTLEN);
    if (memcmp(first8, "RCmb", 4) != 0 || len < CMSG_HDR_LEN || len > max) {
        return CMSG_ESIG;
    }
    *totlen = len;
    return CMSG_OK;
}

static void
decode_clock(const uint8_t *buf, struct cmsg *m)
{
    const uint8_t *c = buf + OFF_NOTUSED1;
    m->has_clock = memcmp(c + CLK_MAGIC, clock_magic, 4) == 0;
    if (m->has_clock) {
        m->clock_ms = (int64_t)rd64(c + CLK_NOW);
        m->echo_ms = (int64_t)rd64(c + CLK_ECHO);
    }
}

static void
decode_header(const uint8_t *buf, struct cmsg *m)
{
    m->totlen = rd32(buf + OFF_TOTLEN);
    m->ver = rd16(buf + OFF_VER);
    m->port = rd16(buf + OFF_PORT);
    m->type = rd16(buf + OFF_TYPE);
    m->count = rd16(buf + OFF_COUNT);
    m->current_epoch = rd64(buf + OFF_CUREPOCH);
    m->config_epoch = rd64(buf + OFF_CFGEPOCH);
    m->offset = rd64(buf + OFF_OFFSET);
    memcpy(m->sender, buf + OFF_SENDER, CMSG_NAMELEN);
    memcpy(m->myslots, buf + OFF_MYSLOTS, CMSG_SLOT_BYTES);
    memcpy(m->slaveof, buf + OFF_SLAVEOF, CMSG_NAMELEN);
    copy_ip(m->myip, buf + OFF_MYIP);
    m->extensions = rd16(buf + OFF_EXTENSIONS);
    m->pport = rd16(buf + OFF_PPORT);
    m->cport = rd16(buf + OFF_CPORT);
    m->flags = rd16(buf + OFF_FLAGS);
    m->state = buf[OFF_STATE];
    memcpy(m->mflags, buf + OFF_MFLAGS, 3);
    decode_clock(buf, m);
}

/* The extensions of a PING/PONG/MEET from `at` to the frame's end, each
 * checked before it is read: a header that fits, a length of at least
 * the header, a multiple of 8, within the frame; a hostname NUL-ended
 * inside its extension. Unknown types are skipped, as 7.0 does. */
static enum cmsg_status
decode_extensions(const uint8_t *buf, size_t at, struct cmsg *m)
{
    for (unsigned i = 0; i < m->extensions; i++) {
        if (m->totlen - at < CMSG_EXT_HDR_LEN) {
            return CMSG_EEXT;
        }
        uint32_t extlen = rd32(buf + at);
        uint16_t type = rd16(buf + at + 4);
        if (extlen < CMSG_EXT_HDR_LEN || extlen % 8 != 0 ||
            extlen > m->totlen - at) {
            return CMSG_EEXT;
        }
        if (type == CMSG_EXT_HOSTNAME) {
            const char *s = (const char *)buf + at + CMSG_EXT_HDR_LEN;
            const char *nul = memchr(s, '\0', extlen - CMSG_EXT_HDR_LEN);
            if (nul == NULL) {
                return CMSG_EEXT;
            }
            m->hostname = s;
            m->hostname_len = (size_t)(nul - s);
        }
        at += extlen;
    }
    return at == m->totlen ? CMSG_OK : CMSG_ELENGTH;
}

static enum cmsg_status
decode_ping(const uint8_t *buf, struct cmsg *m)
{
    uint64_t explen = OFF_DATA + (uint64_t)CMSG_GOSSIP_LEN * m->count;
    if (explen > m->totlen) {
        return CMSG_ELENGTH;
    }
    m->gossip_raw = buf + OFF_DATA;
    if (!(m->mflags[0] & CMSG_FLAG0_EXT_DATA)) {
        m->extensions = 0;          /* without the flag they do not count */
        return explen == m->totlen ? CMSG_OK : CMSG_ELENGTH;
    }
    return decode_extensions(buf, (size_t)explen, m);
}

static enum cmsg_status
decode_publish(const uint8_t *buf, struct cmsg *m)
{
    const uint8_t *d = buf + OFF_DATA;
    if (m->totlen < OFF_DATA + CMSG_PUBLISH_LEN) {
        return CMSG_ELENGTH;
    }
    m->channel_len = rd32(d);
    m->message_len = rd32(d + 4);
    if ((uint64_t)OFF_DATA + CMSG_PUBLISH_LEN + m->channel_len +
        m->message_len != m->totlen) {
        return CMSG_ELENGTH;
    }
    m->channel = d + CMSG_PUBLISH_LEN;
    m->message = m->channel + m->channel_len;
    return CMSG_OK;
}

static enum cmsg_status
decode_update(const uint8_t *buf, struct cmsg *m)
{
    const uint8_t *d = buf + OFF_DATA;
    if (m->totlen != OFF_DATA + CMSG_UPDATE_LEN) {
        return CMSG_ELENGTH;
    }
    m->update_epoch = rd64(d);
    memcpy(m->update_name, d + 8, CMSG_NAMELEN);
    memcpy(m->update_slots, d + 8 + CMSG_NAMELEN, CMSG_SLOT_BYTES);
    return CMSG_OK;
}

static enum cmsg_status
decode_module(const uint8_t *buf, struct cmsg *m)
{
    const uint8_t *d = buf + OFF_DATA;
    if (m->totlen < OFF_DATA + CMSG_MODULE_LEN) {
        return CMSG_ELENGTH;
    }
    m->module_id = rd64(d);         /* opaque: Redis never swaps it */
    m->module_len = rd32(d + 8);
    m->module_type = d[12];
    if ((uint64_t)OFF_DATA + CMSG_MODULE_LEN + m->module_len != m->totlen) {
        return CMSG_ELENGTH;
    }
    m->module_payload = d + CMSG_MODULE_LEN;
    return CMSG_OK;
}

static enum cmsg_status
decode_body(const uint8_t *buf, struct cmsg *m)
{
    switch (m->type) {
    case CMSG_PING: case CMSG_PONG: case CMSG_MEET:
        return decode_ping(buf, m);
    case CMSG_FAIL:
        if (m->totlen != OFF_DATA + CMSG_NAMELEN) {
            return CMSG_ELENGTH;
        }
        memcpy(m->about, buf + OFF_DATA, CMSG_NAMELEN);
        return CMSG_OK;
    case CMSG_PUBLISH: case CMSG_PUBLISHSHARD:
        return decode_publish(buf, m);
    case CMSG_AUTH_REQUEST: case CMSG_AUTH_ACK: case CMSG_MFSTART:
        return m->totlen == OFF_DATA ? CMSG_OK : CMSG_ELENGTH;
    case CMSG_UPDATE:
        return decode_update(buf, m);
    case CMSG_MODULE:
        return decode_module(buf, m);
    default:
        return CMSG_OK;             /* unknown: taken as well formed */
    }
}

enum cmsg_status
cmsg_decode(const uint8_t *buf, size_t len, struct cmsg *m)
{
    memset(m, 0, sizeof(*m));
    if (len < CMSG_HDR_LEN) {
        return CMSG_ESHORT;
    }
    if (memcmp(buf + OFF_SIG, "RCmb", 4) != 0) {
        return CMSG_ESIG;
    }
    decode_header(buf, m);
    if (m->totlen != len) {
        return m->totlen > len ? CMSG_ESHORT : CMSG_ELENGTH;
    }
    if (m->ver != CMSG_PROTO_VER) {
        return CMSG_EVERSION;
    }
    return decode_body(buf, m);
}

void
cmsg_gossip_get(const struct cmsg *m, unsigned i, struct cmsg_gossip *g)
{
    const uint8_t *e = m->gossip_raw + (size_t)i * CMSG_GOSSIP_LEN;
    memcpy(g->name, e + G_NAME, CMSG_NAMELEN);
    g->ping_sent = rd32(e + G_PING);
    g->pong_received = rd32(e + G_PONG);
    copy_ip(g->ip, e + G_IP);
    g->port = rd16(e + G_PORT);
    g->cport = rd16(e + G_CPORT);
    g->flags = rd16(e + G_FLAGS);
    g->pport = rd16(e + G_PPORT);
}

/* ---- encoding -------------------------------------------------------- */

/* A hostname extension's bytes: header, the name, a NUL, padding to 8. */
static size_t
hostname_ext_size(size_t len)
{
    return CMSG_EXT_HDR_LEN + (len + 1 + 7) / 8 * 8;
}

static bool
is_ping(unsigned type)
{
    return type == CMSG_PING || type == CMSG_PONG || type == CMSG_MEET;
}

size_t
cmsg_size(const struct cmsg *m)
{
    switch (m->type) {
    case CMSG_PING: case CMSG_PONG: case CMSG_MEET:
        return OFF_DATA + (size_t)CMSG_GOSSIP_LEN * m->count +
               (m->hostname != NULL ? hostname_ext_size(m->hostname_len) : 0);
    case CMSG_FAIL:
        return OFF_DATA + CMSG_NAMELEN;
    case CMSG_PUBLISH: case CMSG_PUBLISHSHARD:
        return OFF_DATA + CMSG_PUBLISH_LEN + (size_t)m->channel_len +
               m->message_len;
    case CMSG_UPDATE:
        return OFF_DATA + CMSG_UPDATE_LEN;
    case CMSG_MODULE:
        return OFF_DATA + CMSG_MODULE_LEN + (size_t)m->module_len;
    default:
        return OFF_DATA;
    }
}

static void
encode_header(const struct cmsg *m, uint8_t *out, size_t totlen)
{
    memset(out, 0, OFF_DATA);
    memcpy(out + OFF_SIG, "RCmb", 4);
    wr32(out + OFF_TOTLEN, (uint32_t)totlen);
    wr16(out + OFF_VER, CMSG_PROTO_VER);
    wr16(out + OFF_PORT, m->port);
    wr16(out + OFF_TYPE, m->type);
    wr16(out + OFF_COUNT, is_ping(m->type) ? m->count : 0);
    wr64(out + OFF_CUREPOCH, m->current_epoch);
    wr64(out + OFF_CFGEPOCH, m->config_epoch);
    wr64(out + OFF_OFFSET, m->offset);
    memcpy(out + OFF_SENDER, m->sender, CMSG_NAMELEN);
    memcpy(out + OFF_MYSLOTS, m->myslots, CMSG_SLOT_BYTES);
    memcpy(out + OFF_SLAVEOF, m->slaveof, CMSG_NAMELEN);
    memcpy(out + OFF_MYIP, m->myip, strnlen(m->myip, CMSG_IPLEN - 1));
    wr16(out + OFF_PPORT, m->pport);
    wr16(out + OFF_CPORT, m->cport);
    wr16(out + OFF_FLAGS, m->flags);
    out[OFF_STATE] = m->state;
    memcpy(out + OFF_MFLAGS, m->mflags, 3);
    if (m->has_clock) {
        uint8_t *c = out + OFF_NOTUSED1;
        memcpy(c + CLK_MAGIC, clock_magic, 4);
        wr64(c + CLK_NOW, (uint64_t)m->clock_ms);
        wr64(c + CLK_ECHO, (uint64_t)m->echo_ms);
    }
}

static void
encode_gossip(const struct cmsg_gossip *g, uint8_t *e)
{
    memset(e, 0, CMSG_GOSSIP_LEN);
    memcpy(e + G_NAME, g->name, CMSG_NAMELEN);
    wr32(e + G_PING, g->ping_sent);
    wr32(e + G_PONG, g->pong_received);
    memcpy(e + G_IP, g->ip, strnlen(g->ip, CMSG_IPLEN - 1));
    wr16(e + G_PORT, g->port);
    wr16(e + G_CPORT, g->cport);
    wr16(e + G_FLAGS, g->flags);
    wr16(e + G_PPORT, g->pport);
}

static void
encode_ping(const struct cmsg *m, uint8_t *out)
{
    uint8_t *p = out + OFF_DATA;
    for (unsigned i = 0; i < m->count; i++, p += CMSG_GOSSIP_LEN) {
        encode_gossip(&m->gossip[i], p);
    }
    if (m->hostname == NULL) {
        return;
    }
    size_t extlen = hostname_ext_size(m->hostname_len);
    memset(p, 0, extlen);
    wr32(p, (uint32_t)extlen);
    wr16(p + 4, CMSG_EXT_HOSTNAME);
    memcpy(p + CMSG_EXT_HDR_LEN, m->hostname, m->hostname_len);
    out[OFF_MFLAGS] |= CMSG_FLAG0_EXT_DATA;
    wr16(out + OFF_EXTENSIONS, 1);
}

static void
encode_body(const struct cmsg *m, uint8_t *out)
{
    uint8_t *d = out + OFF_DATA;
    switch (m->type) {
    case CMSG_PING: case CMSG_PONG: case CMSG_MEET:
        encode_ping(m, out);
        break;
    case CMSG_FAIL:
        memcpy(d, m->about, CMSG_NAMELEN);
        break;
    case CMSG_PUBLISH: case CMSG_PUBLISHSHARD:
        wr32(d, m->channel_len);
        wr32(d + 4, m->message_len);
        if (m->channel_len > 0) {
            memcpy(d + CMSG_PUBLISH_LEN, m->channel, m->channel_len);
        }
        if (m->message_len > 0) {
            memcpy(d + CMSG_PUBLISH_LEN + m->channel_len, m->message,
                   m->message_len);
        }
        break;
    case CMSG_UPDATE:
        wr64(d, m->update_epoch);
        memcpy(d + 8, m->update_name, CMSG_NAMELEN);
        memcpy(d + 8 + CMSG_NAMELEN, m->update_slots, CMSG_SLOT_BYTES);
        break;
    case CMSG_MODULE:
        wr64(d, m->module_id);
        wr32(d + 8, m->module_len);
        d[12] = m->module_type;
        if (m->module_len > 0) {
            memcpy(d + CMSG_MODULE_LEN, m->module_payload, m->module_len);
        }
        break;
    default:
        break;
    }
}

size_t
cmsg_encode(const struct cmsg *m, uint8_t *out)
{
    size_t totlen = cmsg_size(m);
    encode_header(m, out, totlen);
    encode_body(m, out);
    return totlen;
}

const char *
cmsg_type_name(unsigned type)
{
    static const char *const names[CMSG_TYPE_COUNT] = {
        "ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack",
        "update", "mfstart", "module", "publishshard"
    };
    return type < CMSG_TYPE_COUNT ? names[type] : "unknown";
}
