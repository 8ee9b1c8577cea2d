#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

// getrandom(2): the kernel CSPRNG behind every token secret and key. Glibc's Swift module
// does not export <sys/random.h>, so it rides along with the other crypto headers.
#include <sys/random.h>
