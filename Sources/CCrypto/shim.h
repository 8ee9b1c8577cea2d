// The low-level SHA-256 calls are deprecated in OpenSSL 3 in favour of EVP, but EVP fetches
// and allocates per call; HMAC with a key fixed for the process's life is faster on
// precomputed inner/outer states (RFC 2104 §4), which only the low-level API exposes.
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <string.h>

// getrandom(2): the kernel CSPRNG behind every token secret and key. Glibc's Swift module
// does not export <sys/random.h>, so it rides along with the other crypto headers.
#include <sys/random.h>

/// HMAC-SHA-256 states after absorbing (key XOR ipad) and (key XOR opad).
typedef struct {
    SHA256_CTX inner;
    SHA256_CTX outer;
} baton_hmac_key;

/// Prepares `prepared` for `key` (keys longer than the block are hashed first, RFC 2104 §2).
static inline void baton_hmac_prepare(baton_hmac_key *prepared, const unsigned char *key, size_t length) {
    unsigned char block[64];
    memset(block, 0, sizeof block);
    if (length > sizeof block) {
        SHA256(key, length, block);
    } else if (length > 0) {
        memcpy(block, key, length);
    }
    unsigned char pad[64];
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x36;
    SHA256_Init(&prepared->inner);
    SHA256_Update(&prepared->inner, pad, sizeof pad);
    for (int i = 0; i < 64; i++) pad[i] = block[i] ^ 0x5c;
    SHA256_Init(&prepared->outer);
    SHA256_Update(&prepared->outer, pad, sizeof pad);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
}

/// SHA-256 of `message` into `out` (32 bytes), on the low-level API: OpenSSL 3's `SHA256()`
/// goes through EVP_Q_digest, which fetches the algorithm on every call.
static inline void baton_sha256(const unsigned char *message, size_t length, unsigned char *out) {
    SHA256_CTX context;
    SHA256_Init(&context);
    SHA256_Update(&context, message, length);
    SHA256_Final(out, &context);
}

/// HMAC-SHA-256 of `message` under the prepared key, into `out` (32 bytes).
static inline void baton_hmac_sha256(const baton_hmac_key *prepared, const unsigned char *message, size_t length, unsigned char *out) {
    SHA256_CTX context = prepared->inner;
    unsigned char inner[32];
    SHA256_Update(&context, message, length);
    SHA256_Final(inner, &context);
    context = prepared->outer;
    SHA256_Update(&context, inner, sizeof inner);
    SHA256_Final(out, &context);
}
