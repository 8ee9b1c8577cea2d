// The signature algorithms of DPoP proofs (RFC 9449): ES256 (ECDSA on P-256 with SHA-256,
// RFC 7518 §3.4) and Ed25519 (RFC 8037), over libcrypto. Each call takes and gives raw
// fixed-size byte strings, as JOSE encodes them, so no OpenSSL object leaves this file.
//
// ES256 uses the low-level EC_KEY/ECDSA API (deprecated in OpenSSL 3, kept in 3.x): EVP
// would fetch a provider implementation and build a parameter list on every proof.
#ifndef BATON_JOSE_H
#define BATON_JOSE_H

#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED 1
#endif

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/// The field prime p of P-256, big-endian (SEC 2 §2.4.2): a coordinate must be below it.
static const unsigned char baton_p256_prime[32] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
};

// Function-local statics: Swift's importer emits a header's static inline functions with
// their locals, but not a file-scope static variable.
static inline EC_GROUP **baton_p256_group_slot(void) {
    static EC_GROUP *group;
    return &group;
}

static inline void baton_p256_make_group(void) { *baton_p256_group_slot() = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1); }

/// A new P-256 key with no point yet. Building the group from its name costs more than the
/// rest of a verification (Montgomery constants computed anew), so it is built once per
/// process and copied (EC_KEY_set_group duplicates it, and a read-only group is thread-safe).
static inline EC_KEY *baton_p256_new_key(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, baton_p256_make_group);
    const EC_GROUP *group = *baton_p256_group_slot();
    EC_KEY *key = group ? EC_KEY_new() : NULL;
    if (key && EC_KEY_set_group(key, group) != 1) {
        EC_KEY_free(key);
        return NULL;
    }
    return key;
}

/// What each thread verifies ES256 with: a P-256 key made once per thread (the group's copy
/// included) and the point and coordinates it is given anew for every proof. Setting a point
/// (its conversion and the curve check: about 1 µs) costs less than building a key (about
/// 3 µs, and 10 µs or more with cold caches), the same for any number of devices, and
/// touches nothing another thread uses: no lock, no shared reference count.
typedef struct {
    EC_KEY *key;
    EC_POINT *point;
    BIGNUM *x;
    BIGNUM *y;
} baton_p256_verifier;

static inline void baton_p256_verifier_free(void *value) {
    baton_p256_verifier *verifier = value;
    if (!verifier) return;
    EC_POINT_free(verifier->point);
    EC_KEY_free(verifier->key);
    BN_free(verifier->x);
    BN_free(verifier->y);
    free(verifier);
}

static inline pthread_key_t *baton_p256_verifier_slot(void) {
    static pthread_key_t slot;
    return &slot;
}

/// Whether the slot was made: a process out of thread-specific keys (PTHREAD_KEYS_MAX) has
/// none, and key 0 would then be another component's.
static inline int *baton_p256_verifier_slot_made(void) {
    static int made;
    return &made;
}

static inline void baton_p256_make_verifier_slot(void) {
    *baton_p256_verifier_slot_made() = pthread_key_create(baton_p256_verifier_slot(), baton_p256_verifier_free) == 0;
}

/// This thread's verifying key, holding the public point (x, y) (32 bytes each, big-endian);
/// NULL when a coordinate is not below p or the point is not on the curve (or memory ran
/// out). P-256's cofactor is 1, so a point on the curve other than infinity (which has no
/// affine coordinates) is in the group. The key is this thread's until its next call: the
/// caller verifies with it and keeps no reference.
static inline EC_KEY *baton_p256_thread_key(const unsigned char *x, const unsigned char *y) {
    if (memcmp(x, baton_p256_prime, 32) >= 0 || memcmp(y, baton_p256_prime, 32) >= 0) return NULL;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, baton_p256_make_verifier_slot);
    if (!*baton_p256_verifier_slot_made()) return NULL;  // fails closed: every ES256 proof is refused
    pthread_key_t slot = *baton_p256_verifier_slot();
    baton_p256_verifier *verifier = pthread_getspecific(slot);
    if (!verifier) {
        verifier = calloc(1, sizeof *verifier);
        if (!verifier) return NULL;
        verifier->key = baton_p256_new_key();
        verifier->point = verifier->key ? EC_POINT_new(EC_KEY_get0_group(verifier->key)) : NULL;
        verifier->x = BN_new();
        verifier->y = BN_new();
        if (!verifier->point || !verifier->x || !verifier->y || pthread_setspecific(slot, verifier) != 0) {
            baton_p256_verifier_free(verifier);
            return NULL;
        }
    }
    // EC_POINT_set_affine_coordinates refuses a point that is not on the curve (OpenSSL >= 1.1.1).
    // On any failure the key keeps the previous proof's point, and NULL is returned, so that
    // point is never used for this one.
    const EC_GROUP *group = EC_KEY_get0_group(verifier->key);
    if (!BN_bin2bn(x, 32, verifier->x) || !BN_bin2bn(y, 32, verifier->y)
        || EC_POINT_set_affine_coordinates(group, verifier->point, verifier->x, verifier->y, NULL) != 1
        || EC_KEY_set_public_key(verifier->key, verifier->point) != 1) {
        ERR_clear_error();
        return NULL;
    }
    return verifier->key;
}

/// Verifies an ES256 signature (r ‖ s, 32 bytes each) of a SHA-256 `digest` under the public
/// point (x, y). Returns 1 when it verifies, 0 when it does not, -1 when (x, y) is no key.
static inline int baton_es256_verify(const unsigned char *x, const unsigned char *y,
                                     const unsigned char *digest, const unsigned char *signature) {
    EC_KEY *key = baton_p256_thread_key(x, y);
    if (!key) return -1;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(signature, 32, NULL);
    BIGNUM *s = BN_bin2bn(signature + 32, 32, NULL);
    int result = 0;
    if (sig && r && s && ECDSA_SIG_set0(sig, r, s) == 1) {
        r = s = NULL;  // owned by sig now
        // ECDSA_do_verify refuses r or s outside [1, n-1] itself.
        result = ECDSA_do_verify(digest, 32, sig, key) == 1 ? 1 : 0;
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    ERR_clear_error();
    return result;
}

/// The P-256 key with private scalar `d` (32 bytes), with its public point; NULL when d is
/// not in [1, n-1].
static inline EC_KEY *baton_p256_private_key(const unsigned char *d) {
    EC_KEY *key = baton_p256_new_key();
    const EC_GROUP *group = key ? EC_KEY_get0_group(key) : NULL;
    BIGNUM *scalar = BN_bin2bn(d, 32, NULL);
    EC_POINT *point = group ? EC_POINT_new(group) : NULL;
    int ok = point && scalar && !BN_is_zero(scalar) && BN_cmp(scalar, EC_GROUP_get0_order(group)) < 0
        && EC_POINT_mul(group, point, scalar, NULL, NULL, NULL) == 1
        && EC_KEY_set_private_key(key, scalar) == 1 && EC_KEY_set_public_key(key, point) == 1;
    EC_POINT_free(point);
    BN_clear_free(scalar);
    if (!ok) {
        EC_KEY_free(key);
        ERR_clear_error();
        return NULL;
    }
    return key;
}

/// The public point (x, y) of `key`, 32 bytes each. Returns 1, or 0 on failure.
static inline int baton_p256_public_point(const EC_KEY *key, unsigned char *x, unsigned char *y) {
    BIGNUM *bx = BN_new();
    BIGNUM *by = BN_new();
    int ok = bx && by && EC_POINT_get_affine_coordinates(EC_KEY_get0_group(key), EC_KEY_get0_public_key(key), bx, by, NULL) == 1
        && BN_bn2binpad(bx, x, 32) == 32 && BN_bn2binpad(by, y, 32) == 32;
    BN_free(bx);
    BN_free(by);
    return ok;
}

/// A new P-256 key: its scalar d and public point (x, y), 32 bytes each. Returns 1, or 0.
static inline int baton_p256_generate(unsigned char *d, unsigned char *x, unsigned char *y) {
    EC_KEY *key = baton_p256_new_key();
    int ok = key && EC_KEY_generate_key(key) == 1 && BN_bn2binpad(EC_KEY_get0_private_key(key), d, 32) == 32
        && baton_p256_public_point(key, x, y);
    EC_KEY_free(key);
    ERR_clear_error();
    return ok;
}

/// The public point (x, y) of the scalar `d`. Returns 1, or 0 when d is not in [1, n-1].
static inline int baton_p256_derive_public(const unsigned char *d, unsigned char *x, unsigned char *y) {
    EC_KEY *key = baton_p256_private_key(d);
    int ok = key && baton_p256_public_point(key, x, y);
    EC_KEY_free(key);
    return ok;
}

/// Signs a SHA-256 `digest` with the scalar `d` (ES256): r ‖ s into `signature` (64 bytes).
/// Returns 1, or 0 on failure.
static inline int baton_es256_sign(const unsigned char *d, const unsigned char *digest, unsigned char *signature) {
    EC_KEY *key = baton_p256_private_key(d);
    ECDSA_SIG *sig = key ? ECDSA_do_sign(digest, 32, key) : NULL;
    const BIGNUM *r = NULL, *s = NULL;
    if (sig) ECDSA_SIG_get0(sig, &r, &s);
    int ok = r && s && BN_bn2binpad(r, signature, 32) == 32 && BN_bn2binpad(s, signature + 32, 32) == 32;
    ECDSA_SIG_free(sig);
    EC_KEY_free(key);
    ERR_clear_error();
    return ok;
}

/// Verifies an Ed25519 signature (64 bytes) of `message` under the public key `x` (32
/// bytes). Returns 1 when it verifies, 0 when it does not, -1 when `x` is no key.
static inline int baton_ed25519_verify(const unsigned char *x, const unsigned char *message, size_t length,
                                       const unsigned char *signature) {
    EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, 32);
    if (!key) {
        ERR_clear_error();
        return -1;
    }
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    int result = context && EVP_DigestVerifyInit(context, NULL, NULL, NULL, key) == 1
        && EVP_DigestVerify(context, signature, 64, message, length) == 1;
    EVP_MD_CTX_free(context);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return result;
}

/// Signs `message` with the Ed25519 private key `seed` (32 bytes) into `signature` (64
/// bytes) and writes its public key to `x` (32 bytes). Returns 1, or 0 on failure.
static inline int baton_ed25519_sign(const unsigned char *seed, const unsigned char *message, size_t length,
                                     unsigned char *signature, unsigned char *x) {
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    EVP_MD_CTX *context = key ? EVP_MD_CTX_new() : NULL;
    size_t signatureLength = 64, publicLength = 32;
    int ok = context && EVP_DigestSignInit(context, NULL, NULL, NULL, key) == 1
        && EVP_DigestSign(context, signature, &signatureLength, message, length) == 1 && signatureLength == 64
        && EVP_PKEY_get_raw_public_key(key, x, &publicLength) == 1 && publicLength == 32;
    EVP_MD_CTX_free(context);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return ok;
}

#endif
