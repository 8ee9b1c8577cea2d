// libcurl's easy interface for webhook deliveries. curl_easy_setopt and curl_easy_getinfo are
// variadic, which Swift cannot call, so one POST is set up and performed here in C.
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/// curl_global_init once per process, before any handle (Swift calls it from a `static let`).
static inline int baton_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }

static inline size_t baton_curl_discard(char *data, size_t size, size_t count, void *context) {
    (void)data;
    (void)context;
    return size * count;  // the answer's body is not needed: its status decides
}

static inline int baton_curl_progress(void *stop, curl_off_t total, curl_off_t now, curl_off_t sent_total, curl_off_t sent) {
    (void)total; (void)now; (void)sent_total; (void)sent;
    return __atomic_load_n((const int *)stop, __ATOMIC_ACQUIRE) ? 1 : 0;  // nonzero aborts the transfer
}

/// Sets `*flag` so transfers watching it stop (within about a second: libcurl calls the
/// progress function at least that often).
static inline void baton_curl_raise(int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELEASE); }
static inline int baton_curl_raised(const int *flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE); }

/// One POST of `length` bytes of `body` to `url` with `headers`, on `curl` (reset first; its
/// open connections are kept for the next POST). No redirects; http and https only, with
/// certificate verification (libcurl's default), against `ca_file`'s certificates instead of the
/// system's when it is not NULL. The whole attempt, connecting included,
/// ends after `timeout_ms`, or once `*stop` is nonzero. Returns the CURLcode; `*status` gets
/// the answer's HTTP status (0 without one), `error` (CURL_ERROR_SIZE bytes) curl's message.
static inline int baton_curl_post(CURL *curl, const char *url, const char *body, long length, struct curl_slist *headers,
                                  const char *ca_file, long timeout_ms, int *stop, long *status, char *error) {
    curl_easy_reset(curl);
    error[0] = 0;
    *status = 0;
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, length);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    // The receiver's CA file alone: the default CA directory would be trusted beside it.
    if (ca_file) {
        curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file);
        curl_easy_setopt(curl, CURLOPT_CAPATH, NULL);
    }
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: other threads run
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, baton_curl_discard);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, baton_curl_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, (void *)stop);
    CURLcode code = curl_easy_perform(curl);
    if (code == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    else if (!error[0]) snprintf(error, CURL_ERROR_SIZE, "%s", curl_easy_strerror(code));
    return (int)code;
}

/// What a capped GET collected: the body (malloc'd, at most `limit` bytes; the caller frees
/// `data`), whether the answer was longer, and its Cache-Control header.
typedef struct {
    char *data;
    size_t length;
    size_t limit;
    int too_large;
    char cache_control[256];
} baton_curl_body;

static inline size_t baton_curl_collect(char *data, size_t size, size_t count, void *context) {
    baton_curl_body *body = (baton_curl_body *)context;
    size_t bytes = size * count;
    if (body->length + bytes > body->limit) {
        body->too_large = 1;
        return 0;  // anything but `bytes` aborts the transfer (CURLE_WRITE_ERROR)
    }
    char *grown = realloc(body->data, body->length + bytes + 1);
    if (!grown) return 0;
    body->data = grown;
    memcpy(body->data + body->length, data, bytes);
    body->length += bytes;
    body->data[body->length] = 0;
    return bytes;
}

static inline size_t baton_curl_header(char *line, size_t size, size_t count, void *context) {
    baton_curl_body *body = (baton_curl_body *)context;
    size_t bytes = size * count;
    static const char name[] = "cache-control:";
    if (bytes > sizeof name - 1 && strncasecmp(line, name, sizeof name - 1) == 0) {
        size_t start = sizeof name - 1, end = bytes;
        while (start < end && (line[start] == ' ' || line[start] == '\t')) start++;
        while (end > start && (line[end - 1] == '\r' || line[end - 1] == '\n' || line[end - 1] == ' ')) end--;
        size_t copied = end - start < sizeof body->cache_control - 1 ? end - start : sizeof body->cache_control - 1;
        memcpy(body->cache_control, line + start, copied);
        body->cache_control[copied] = 0;
    }
    return bytes;
}

/// One GET of `url` over HTTPS only (no redirects, no other protocol), the certificate checked
/// against `ca_pem` (PEM text, `ca_length` bytes) instead of the system's store when it is not
/// NULL; the whole attempt ends after `timeout_ms`; an answer longer than `body->limit` is cut
/// off (`too_large`). Returns the CURLcode; `*status` gets the HTTP status (0 without one),
/// `error` (CURL_ERROR_SIZE bytes) curl's message.
static inline int baton_curl_get_https(CURL *curl, const char *url, const char *ca_pem, size_t ca_length, long timeout_ms,
                                       baton_curl_body *body, long *status, char *error) {
    curl_easy_reset(curl);
    error[0] = 0;
    *status = 0;
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
#else
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS, (long)CURLPROTO_HTTPS);
#endif
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    if (ca_pem) {
        // Only these certificates: the default bundle file and, with it, the default CA
        // directory (which CAINFO_BLOB alone leaves in place) are both turned off, and a
        // libcurl that cannot take the blob fails the fetch rather than trust the system's.
        struct curl_blob blob = {(void *)ca_pem, ca_length, CURL_BLOB_COPY};
        if (curl_easy_setopt(curl, CURLOPT_CAINFO, NULL) != CURLE_OK || curl_easy_setopt(curl, CURLOPT_CAPATH, NULL) != CURLE_OK
            || curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK) {
            snprintf(error, CURL_ERROR_SIZE, "this libcurl cannot verify against the issuer's own CA certificates");
            return (int)CURLE_SSL_CACERT_BADFILE;
        }
    }
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "Baton-Identity/1");
    curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)body->limit);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, baton_curl_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, (void *)body);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, baton_curl_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, (void *)body);
    CURLcode code = curl_easy_perform(curl);
    if (code == CURLE_FILESIZE_EXCEEDED) body->too_large = 1;
    if (code == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    else if (!error[0]) snprintf(error, CURL_ERROR_SIZE, "%s", curl_easy_strerror(code));
    return (int)code;
}
