/*
 * pack.c - the compact encoding of the collections (lib/pack.h).
 *
 * Every change is one splice: a byte range of the block replaced by the
 * encoded new entries, the block resized to exactly the bytes in use, as
 * listpack does, so a pack owns no slack beyond the allocator's rounding.
 */
#include "lib/pack.h"

#include <string.h>

#include "lib/mem.h"
#include "lib/varint.h"

size_t
pack_entry_size(size_t len)
{
    return varint_size(len) + len;
}

uint32_t
pack_offset(const struct pack *pk, uint32_t index)
{
    if (index >= pk->count) {
        return pk->bytes;
    }
    uint32_t off = 0;
    struct pack_item it;
    while (index-- > 0) {
        off = pack_at(pk, off, &it);
    }
    return off;
}

/* Does [data, data+len) lie in the block? Then moving the block would
 * move the bytes being written. */
static bool
inside(const struct pack *pk, const unsigned char *data, uint32_t len)
{
    uintptr_t b = (uintptr_t)pk->p, e = b + pk->bytes, d = (uintptr_t)data;
    return pk->p != NULL && len > 0 && d < e && d + len > b;
}

static void
write_items(unsigned char *p, const struct pack_item *items, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        p = varint_put(p, items[i].len);
        if (items[i].len > 0) {
            memcpy(p, items[i].data, items[i].len);
        }
        p += items[i].len;
    }
}

/* Into a new block (the items come from the old one): prefix, items,
 * suffix after the `gone` bytes at off. */
static bool
splice_fresh(struct pack *pk, uint32_t off, uint32_t gone, size_t add,
             const struct pack_item *items, uint32_t n, size_t nb)
{
    unsigned char *q = mem_owned_realloc(NULL, nb);
    if (q == NULL) {
        return false;
    }
    memcpy(q, pk->p, off);
    write_items(q + off, items, n);
    memcpy(q + off + add, pk->p + off + gone, pk->bytes - off - gone);
    mem_owned_free(pk->p);
    pk->p = q;
    pk->bytes = (uint32_t)nb;
    return true;
}

/* Replace the `gone` bytes at off by the n items encoded (add bytes). */
static bool
splice(struct pack *pk, uint32_t off, uint32_t gone,
       const struct pack_item *items, uint32_t n, size_t add)
{
    size_t nb = (size_t)pk->bytes - gone + add;
    if (nb > PACK_MAX_BYTES) {
        return false;
    }
    if (nb == 0) {
        mem_owned_free(pk->p);      /* the caller keeps count */
        pk->p = NULL;
        pk->bytes = 0;
        return true;
    }
    bool aliased = false;
    for (uint32_t i = 0; i < n && !aliased; i++) {
        aliased = inside(pk, items[i].data, items[i].len);
    }
    if (aliased) {
        return splice_fresh(pk, off, gone, add, items, n, nb);
    }
    size_t tail = (size_t)pk->bytes - off - gone;
    if (nb > pk->bytes) {
        unsigned char *q = mem_owned_realloc(pk->p, nb);
        if (q == NULL) {
            return false;
        }
        pk->p = q;
    }
    memmove(pk->p + off + add, pk->p + off + gone, tail);
    write_items(pk->p + off, items, n);
    if (nb < pk->bytes) {
        /* Shrinking cannot really fail; if it does the block just keeps
         * its old size. */
        unsigned char *q = mem_owned_realloc(pk->p, nb);
        if (q != NULL) {
            pk->p = q;
        }
    }
    pk->bytes = (uint32_t)nb;
    return true;
}

bool
pack_insert(struct pack *pk, uint32_t off, const struct pack_item *items,
            uint32_t n)
{
    size_t add = 0;
    for (uint32_t i = 0; i < n; i++) {
        add += pack_entry_size(items[i].len);
        if (add > PACK_MAX_BYTES) {
            return false;
        }
    }
    if (n == 0) {
        return true;
    }
    if (!splice(pk, off, 0, items, n, add)) {
        return false;
    }
    pk->count += n;
    return true;
}

void
pack_delete(struct pack *pk, uint32_t off, uint32_t n)
{
    uint32_t end = off;
    struct pack_item it;
    for (uint32_t i = 0; i < n; i++) {
        end = pack_at(pk, end, &it);
    }
    if (n == 0) {
        return;
    }
    (void)splice(pk, off, end - off, NULL, 0, 0);    /* never grows */
    pk->count -= n;
}

bool
pack_replace(struct pack *pk, uint32_t off, const void *data, uint32_t len)
{
    struct pack_item it;
    uint32_t end = pack_at(pk, off, &it);
    struct pack_item nw = { data, len };
    return splice(pk, off, end - off, &nw, 1, pack_entry_size(len));
}

void
pack_free(struct pack *pk)
{
    mem_owned_free(pk->p);
    pk->p = NULL;
    pk->bytes = 0;
    pk->count = 0;
}

size_t
pack_owned(const struct pack *pk)
{
    return mem_usable(pk->p);
}

bool
pack_copy(struct pack *dst, const struct pack *src)
{
    if (src->bytes == 0) {
        *dst = (struct pack){ 0 };
        return true;
    }
    unsigned char *q = mem_owned_realloc(NULL, src->bytes);
    if (q == NULL) {
        return false;
    }
    memcpy(q, src->p, src->bytes);
    dst->p = q;
    dst->bytes = src->bytes;
    dst->count = src->count;
    return true;
}

/* One entry's length at p[*off..bytes): false when the varint is cut
 * short, longer than it needs to be, or past 32 bits. */
static bool
valid_varint(const unsigned char *p, size_t bytes, size_t *off,
             uint64_t *len)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        if (*off >= bytes || shift > 28) {
            return false;
        }
        unsigned char b = p[(*off)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            /* A last byte of zero after others is a padded encoding:
             * refused so a block has one spelling. */
            if (b == 0 && shift > 0) {
                return false;
            }
            break;
        }
        shift += 7;
    }
    if (v > UINT32_MAX) {
        return false;
    }
    *len = v;
    return true;
}

bool
pack_valid(const unsigned char *p, size_t bytes, uint32_t count)
{
    if (bytes > PACK_MAX_BYTES || (bytes > 0 && p == NULL)) {
        return false;
    }
    size_t off = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t len;
        if (!valid_varint(p, bytes, &off, &len) || len > bytes - off) {
            return false;
        }
        off += len;
    }
    return off == bytes;
}
