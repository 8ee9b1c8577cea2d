#ifndef BATON_HEAD_SLOTS_H
#define BATON_HEAD_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

/// Words of payload one slot holds: 232 bytes.
#define BATON_SLOT_PAYLOAD_WORDS 29
/// Slots per bucket: a key lives in one of the 4 slots of the bucket its hash names.
#define BATON_SLOT_WAYS 4

/// One slot (256 bytes) of a table that every thread reads and fills without a lock: a
/// sequence lock per slot. `sequence` is odd while a writer fills the slot; a reader copies
/// the slot and keeps the copy only if `sequence` was even and unchanged around it (Boehm,
/// "Can seqlocks get along with programming language memory models?", 2012: the payload is
/// read and written with relaxed atomics, fenced). `length` 0: empty.
typedef struct {
    uint64_t sequence;
    uint64_t key;
    uint64_t length;
    uint64_t words[BATON_SLOT_PAYLOAD_WORDS];
} baton_slot;

/// Copies the payload of `slot` into `out` (BATON_SLOT_PAYLOAD_WORDS words) if the slot holds
/// `key` and no writer touched it meanwhile; returns its length in bytes, 0 otherwise.
static inline uint64_t baton_slot_read(const baton_slot *slot, uint64_t key, uint64_t *out) {
    uint64_t before = __atomic_load_n(&slot->sequence, __ATOMIC_ACQUIRE);
    if (before & 1) return 0;
    if (__atomic_load_n(&slot->key, __ATOMIC_RELAXED) != key) return 0;
    uint64_t length = __atomic_load_n(&slot->length, __ATOMIC_RELAXED);
    if (length == 0 || length > 8 * BATON_SLOT_PAYLOAD_WORDS) return 0;
    uint64_t count = (length + 7) / 8;
    for (uint64_t i = 0; i < count; i++) out[i] = __atomic_load_n(&slot->words[i], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED) == before ? length : 0;
}

/// Takes `slot` for writing unless another writer has it (then false: the caller skips).
static inline bool baton_slot_lock(baton_slot *slot, uint64_t *before) {
    uint64_t sequence = __atomic_load_n(&slot->sequence, __ATOMIC_RELAXED);
    if (sequence & 1) return false;
    // Acquire: this writer's stores come after the previous writer's (writers are serialized
    // by the sequence as by a lock; Boehm's argument assumes it).
    if (!__atomic_compare_exchange_n(&slot->sequence, &sequence, sequence + 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return false;
    // Orders the odd sequence before every payload store (the readers' acquire fence pairs with it).
    __atomic_thread_fence(__ATOMIC_RELEASE);
    *before = sequence;
    return true;
}

static inline void baton_slot_unlock(baton_slot *slot, uint64_t before) {
    __atomic_store_n(&slot->sequence, before + 2, __ATOMIC_RELEASE);
}

/// The payload of `key` from its bucket (`bucket` points at BATON_SLOT_WAYS slots); its
/// length in bytes, 0 when none is there now.
static inline uint64_t baton_bucket_read(const baton_slot *bucket, uint64_t key, uint64_t *out) {
    for (int way = 0; way < BATON_SLOT_WAYS; way++) {
        uint64_t length = baton_slot_read(&bucket[way], key, out);
        if (length) return length;
    }
    return 0;
}

/// Stores `length` bytes of `words` as `key`'s payload: in the slot that holds `key`, else in
/// an empty one, else in the slot `victim` names (any value; its low bits are used). Returns
/// false when another writer held that slot (nothing stored: a cache may skip).
static inline bool baton_bucket_write(baton_slot *bucket, uint64_t key, const uint64_t *words, uint64_t length, uint64_t victim) {
    if (length == 0 || length > 8 * BATON_SLOT_PAYLOAD_WORDS) return false;
    int target = -1;
    for (int way = 0; way < BATON_SLOT_WAYS && target < 0; way++) {
        if (__atomic_load_n(&bucket[way].length, __ATOMIC_RELAXED) != 0
            && __atomic_load_n(&bucket[way].key, __ATOMIC_RELAXED) == key) target = way;
    }
    for (int way = 0; way < BATON_SLOT_WAYS && target < 0; way++) {
        if (__atomic_load_n(&bucket[way].length, __ATOMIC_RELAXED) == 0) target = way;
    }
    if (target < 0) target = (int)(victim % BATON_SLOT_WAYS);
    baton_slot *slot = &bucket[target];
    uint64_t before;
    if (!baton_slot_lock(slot, &before)) return false;
    __atomic_store_n(&slot->key, key, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->length, length, __ATOMIC_RELAXED);
    // Last word first, against the readers' order: a reader that skipped the sequence check
    // would see a mixed row at every overlap (SharedHeadTableTests relies on it to fail then).
    for (uint64_t i = (length + 7) / 8; i > 0; i--) __atomic_store_n(&slot->words[i - 1], words[i - 1], __ATOMIC_RELAXED);
    baton_slot_unlock(slot, before);
    return true;
}

/// Empties every slot of the bucket that holds `key` (skipping one a writer holds: a reader
/// that finds a row must validate it anyway).
static inline void baton_bucket_clear(baton_slot *bucket, uint64_t key) {
    for (int way = 0; way < BATON_SLOT_WAYS; way++) {
        baton_slot *slot = &bucket[way];
        if (__atomic_load_n(&slot->key, __ATOMIC_RELAXED) != key || __atomic_load_n(&slot->length, __ATOMIC_RELAXED) == 0) continue;
        uint64_t before;
        if (!baton_slot_lock(slot, &before)) continue;
        if (__atomic_load_n(&slot->key, __ATOMIC_RELAXED) == key) __atomic_store_n(&slot->length, 0, __ATOMIC_RELAXED);
        baton_slot_unlock(slot, before);
    }
}

/// Whether a slot is in use now (for counting; racy by nature).
static inline bool baton_slot_in_use(const baton_slot *slot) {
    return __atomic_load_n(&slot->length, __ATOMIC_RELAXED) != 0;
}

#endif
