// RSA signature verification for the subject tokens of RFC 8693 token exchange (docs/identity.md):
// RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3) and PS256 (RSASSA-PSS with SHA-256,
// MGF1 with SHA-256 and a 32-byte salt, RFC 7518 §3.5). The key is given as the JWK's raw
// big-endian modulus and exponent, so no OpenSSL object leaves this file. Identity-provider
// logins are rare next to verifies: EVP's per-call fetching costs nothing that matters here.
#ifndef BATON_RSA_H
#define BATON_RSA_H

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

/// 1 when `signature` is the RS256 (`pss` 0) or PS256 (`pss` 1) signature of `message` under the
/// public key (n, e); 0 when it is not; -1 when (n, e) is not a usable RSA key.
static inline int baton_rsa_verify(const unsigned char *n, size_t nLength, const unsigned char *e, size_t eLength, int pss,
                                   const unsigned char *message, size_t length, const unsigned char *signature,
                                   size_t signatureLength) {
    int result = -1;
    BIGNUM *modulus = BN_bin2bn(n, (int)nLength, NULL), *exponent = BN_bin2bn(e, (int)eLength, NULL);
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *fromData = NULL;
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *context = NULL;
    if (!modulus || !exponent || !builder) goto done;
    if (OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, modulus) != 1
        || OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, exponent) != 1) goto done;
    params = OSSL_PARAM_BLD_to_param(builder);
    fromData = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (!params || !fromData || EVP_PKEY_fromdata_init(fromData) != 1
        || EVP_PKEY_fromdata(fromData, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) goto done;
    context = EVP_MD_CTX_new();
    EVP_PKEY_CTX *verify = NULL;
    if (!context || EVP_DigestVerifyInit(context, &verify, EVP_sha256(), NULL, key) != 1) goto done;
    if (pss && (EVP_PKEY_CTX_set_rsa_padding(verify, RSA_PKCS1_PSS_PADDING) != 1
                || EVP_PKEY_CTX_set_rsa_mgf1_md(verify, EVP_sha256()) != 1
                || EVP_PKEY_CTX_set_rsa_pss_saltlen(verify, 32) != 1)) goto done;
    result = EVP_DigestVerify(context, signature, signatureLength, message, length) == 1 ? 1 : 0;
done:
    EVP_MD_CTX_free(context);
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(fromData);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(builder);
    BN_free(modulus);
    BN_free(exponent);
    ERR_clear_error();
    return result;
}

#endif
