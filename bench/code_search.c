/*
 * The attack a deal code must withstand, measured: recover a code from the 8 reserve cards every
 * racer sees at the start. Built and run by bench/code_search.py (see docs/benchmarks.md,
 * "Searching a code from its opening reserve"); the figures feed docs/security.md.
 *
 * A candidate code costs two SHA-256 compressions: the seed (SHA-256 of the canonical text: 13
 * bytes for a short code, 37 for a long one, one 64-byte block either way) and block 0 of the
 * word stream (SHA-256 of seed || 00000000, 36 bytes). Its 8 words are the draws for deck places
 * 103 … 96 — R8 … R1 — unless a word is rejected (probability < 2^-25), when block 1 is hashed too.
 * The candidate is dropped at the first reserve card that differs (R8 first). So short and long
 * codes cost the same per candidate; only the number of candidates differs (26^7 against 26^28).
 *
 * Three SHA-256 back ends: "shani" (the x86 SHA extensions, what a careful attacker on this CPU
 * uses), "openssl" (OpenSSL's one-shot SHA256(), itself SHA-NI/AVX2 assembly) and "portable"
 * (plain C). bench/code_search.py checks each against OpenSSL and Python's hashlib before timing.
 *
 *   code_search selftest                          compare the back ends on many inputs
 *   code_search bench BACKEND KIND BODY COUNT R1..R8
 *   code_search search BACKEND KIND BODY COUNT R1..R8
 *
 * BODY is the first candidate's letters (7 for the short space, 28 for the long one); candidates
 * follow in base-26 order. "bench" prints {"backend", "length", "candidates", "cpu_seconds",
 * "matches"} as JSON; "search" prints every matching canonical code, one a line.
 */

#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_OPENSSL
#include <openssl/sha.h>
#endif
#ifdef HAVE_SHANI
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};
static const uint32_t IV[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

/* ---- portable compression ------------------------------------------------------------------ */

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void compress_portable(uint32_t state[8], const uint8_t block[64]) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 | (uint32_t)block[4 * t + 2] << 8 |
               block[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = ROTR(w[t - 15], 7) ^ ROTR(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = ROTR(w[t - 2], 17) ^ ROTR(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = h + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
        uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    state[0] += a; state[1] += b; state[2] += c; state[3] += d;
    state[4] += e; state[5] += f; state[6] += g; state[7] += h;
}

/* ---- SHA-NI compression (x86 SHA extensions) -------------------------------------------------- */

#ifdef HAVE_SHANI
__attribute__((target("sha,sse4.1"))) static void compress_shani(uint32_t state[8], const uint8_t block[64]) {
    const __m128i MASK = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i state1 = _mm_loadu_si128((const __m128i *)&state[4]);
    tmp = _mm_shuffle_epi32(tmp, 0xB1);            /* CDAB */
    state1 = _mm_shuffle_epi32(state1, 0x1B);      /* EFGH */
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8); /* ABEF */
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);   /* CDGH */
    const __m128i abef = state0, cdgh = state1;
    __m128i m[4];
#pragma GCC unroll 16
    for (int g = 0; g < 16; g++) {
        if (g < 4) m[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(block + 16 * g)), MASK);
        __m128i msg = _mm_add_epi32(m[g & 3], _mm_loadu_si128((const __m128i *)&K[4 * g]));
        state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
        if (g >= 3 && g < 15) {
            __m128i t = _mm_alignr_epi8(m[g & 3], m[(g + 3) & 3], 4);
            m[(g + 1) & 3] = _mm_sha256msg2_epu32(_mm_add_epi32(m[(g + 1) & 3], t), m[g & 3]);
        }
        msg = _mm_shuffle_epi32(msg, 0x0E);
        state0 = _mm_sha256rnds2_epu32(state0, state1, msg);
        if (g >= 1 && g < 13) m[(g - 1) & 3] = _mm_sha256msg1_epu32(m[(g - 1) & 3], m[g & 3]);
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
    tmp = _mm_shuffle_epi32(state0, 0x1B);         /* FEBA */
    state1 = _mm_shuffle_epi32(state1, 0xB1);      /* DCHG */
    state0 = _mm_blend_epi16(tmp, state1, 0xF0);   /* DCBA */
    state1 = _mm_alignr_epi8(state1, tmp, 8);      /* ABEF */
    _mm_storeu_si128((__m128i *)&state[0], state0);
    _mm_storeu_si128((__m128i *)&state[4], state1);
}
#endif

/* ---- SHA-256 of a message of at most 55 bytes (one block), by back end ------------------------ */

enum backend { PORTABLE, OPENSSL, SHANI };

static void sha256_short(enum backend backend, const uint8_t *msg, size_t len, uint8_t out[32]) {
#ifdef HAVE_OPENSSL
    if (backend == OPENSSL) {
        SHA256(msg, len, out);
        return;
    }
#endif
    uint8_t block[64] = {0};
    memcpy(block, msg, len);
    block[len] = 0x80;
    block[62] = (uint8_t)((len * 8) >> 8);
    block[63] = (uint8_t)(len * 8);
    uint32_t state[8];
    memcpy(state, IV, sizeof state);
#ifdef HAVE_SHANI
    if (backend == SHANI)
        compress_shani(state, block);
    else
#endif
        compress_portable(state, block);
    for (int k = 0; k < 8; k++) {
        out[4 * k] = (uint8_t)(state[k] >> 24);
        out[4 * k + 1] = (uint8_t)(state[k] >> 16);
        out[4 * k + 2] = (uint8_t)(state[k] >> 8);
        out[4 * k + 3] = (uint8_t)state[k];
    }
}

/* ---- the candidate test ----------------------------------------------------------------------- */

/* Cards as 0 … 51: suit S H D C (× 13) + rank A … K; deck place d holds card d % 52 unshuffled. */
static uint8_t UNSHUFFLED[104];
static uint32_t LIMIT[105];

/* Whether the canonical code `text` deals the reserve `target` (R1 … R8). */
static int deals_reserve(enum backend backend, const char *text, size_t len, const uint8_t target[8]) {
    uint8_t seed_and_counter[36], block[32];
    sha256_short(backend, (const uint8_t *)text, len, seed_and_counter);
    uint32_t counter = 0;
    memset(seed_and_counter + 32, 0, 4);
    sha256_short(backend, seed_and_counter, 36, block);
    int k = 0;
    /* only the places a swap touched differ from UNSHUFFLED: at most 16 of them */
    uint8_t place[16], card[16];
    int touched = 0;
    for (int i = 103; i >= 96; i--) {
        uint32_t word;
        do {
            if (k == 8) { /* every word of the block rejected or used: hash the next block */
                counter++;
                seed_and_counter[32] = (uint8_t)(counter >> 24);
                seed_and_counter[33] = (uint8_t)(counter >> 16);
                seed_and_counter[34] = (uint8_t)(counter >> 8);
                seed_and_counter[35] = (uint8_t)counter;
                sha256_short(backend, seed_and_counter, 36, block);
                k = 0;
            }
            word = (uint32_t)block[4 * k] << 24 | (uint32_t)block[4 * k + 1] << 16 | (uint32_t)block[4 * k + 2] << 8 |
                   block[4 * k + 3];
            k++;
        } while (word >= LIMIT[i + 1]);
        uint32_t j = word % (uint32_t)(i + 1);
        /* deck[i] <-> deck[j]: read both through the touched list */
        uint8_t at_i = UNSHUFFLED[i], at_j = UNSHUFFLED[j];
        int slot_i = -1, slot_j = -1;
        for (int t = 0; t < touched; t++) {
            if (place[t] == i) { at_i = card[t]; slot_i = t; }
            if (place[t] == j) { at_j = card[t]; slot_j = t; }
        }
        if (at_j != target[i - 96]) return 0; /* deck[i] is final after its swap */
        if (slot_j < 0) { place[touched] = (uint8_t)j; slot_j = touched++; }
        card[slot_j] = at_i;
        if (slot_i < 0) { place[touched] = (uint8_t)i; slot_i = touched++; }
        card[slot_i] = at_j;
        if (i == (int)j) card[slot_i] = at_i;
    }
    return 1;
}

static int parse_card(const char *name) {
    static const char *RANKS[] = {"A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"};
    static const char *SUITS = "SHDC";
    size_t n = strlen(name);
    if (n < 2) return -1;
    const char *suit = strchr(SUITS, name[n - 1]);
    if (suit == NULL || name[n - 1] == '\0') return -1;
    for (int r = 0; r < 13; r++)
        if (strlen(RANKS[r]) == n - 1 && strncmp(RANKS[r], name, n - 1) == 0) return (int)(suit - SUITS) * 13 + r;
    return -1;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int selftest(void) {
    uint8_t msg[55], a[32], b[32], c[32];
    uint64_t x = 88172645463325252ULL;
    for (int round = 0; round < 20000; round++) {
        size_t len = (size_t)(round % 56);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            msg[i] = (uint8_t)x;
        }
        sha256_short(PORTABLE, msg, len, a);
#ifdef HAVE_OPENSSL
        sha256_short(OPENSSL, msg, len, b);
        if (memcmp(a, b, 32) != 0) { fprintf(stderr, "portable != openssl (length %zu)\n", len); return 1; }
#else
        memcpy(b, a, 32);
#endif
#ifdef HAVE_SHANI
        sha256_short(SHANI, msg, len, c);
        if (memcmp(a, c, 32) != 0) { fprintf(stderr, "portable != shani (length %zu)\n", len); return 1; }
#else
        memcpy(c, a, 32);
#endif
    }
    printf("ok\n");
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: code_search selftest | (bench|search) BACKEND KIND BODY COUNT R1 R2 R3 R4 R5 R6 R7 R8\n");
    exit(2);
}

int main(int argc, char **argv) {
    for (int d = 0; d < 104; d++) UNSHUFFLED[d] = (uint8_t)(d % 52);
    for (int n = 1; n <= 104; n++) LIMIT[n] = (uint32_t)((1ULL << 32) - (1ULL << 32) % (uint64_t)n);
    if (argc == 2 && strcmp(argv[1], "selftest") == 0) return selftest();
    if (argc != 14) usage();
    int bench = strcmp(argv[1], "bench") == 0;
    if (!bench && strcmp(argv[1], "search") != 0) usage();
    enum backend backend;
    if (strcmp(argv[2], "portable") == 0) backend = PORTABLE;
#ifdef HAVE_OPENSSL
    else if (strcmp(argv[2], "openssl") == 0) backend = OPENSSL;
#endif
#ifdef HAVE_SHANI
    else if (strcmp(argv[2], "shani") == 0) backend = SHANI;
#endif
    else { fprintf(stderr, "unknown or unavailable back end %s\n", argv[2]); return 2; }
    const char *kind = argv[3], *body = argv[4];
    size_t letters = strlen(body);
    if (strlen(kind) != 1 || (letters != 7 && letters != 28) || strspn(body, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != letters) usage();
    char *end;
    unsigned long long count = strtoull(argv[5], &end, 10);
    if (*end != '\0') usage();
    uint8_t target[8];
    for (int s = 0; s < 8; s++) {
        int c = parse_card(argv[6 + s]);
        if (c < 0) { fprintf(stderr, "not a card: %s\n", argv[6 + s]); return 2; }
        target[s] = (uint8_t)c;
    }
    /* the canonical text, with the body's letters at `at[0 … letters-1]` (hyphens skipped) */
    char text[64];
    size_t len = (size_t)snprintf(text, sizeof text, "HM1-%s-", kind);
    size_t at[28];
    for (size_t i = 0; i < letters; i++) {
        if (i > 0 && i % 7 == 0) text[len++] = '-';
        at[i] = len;
        text[len++] = body[i];
    }
    text[len] = '\0';
    unsigned long long matches = 0;
    double start = cpu_seconds();
    for (unsigned long long n = 0; n < count; n++) {
        if (deals_reserve(backend, text, len, target)) {
            matches++;
            if (!bench) printf("%s\n", text);
        }
        for (size_t i = letters; i-- > 0;) { /* the next candidate: base-26 increment */
            if (text[at[i]] != 'Z') { text[at[i]]++; break; }
            text[at[i]] = 'A';
        }
    }
    double seconds = cpu_seconds() - start;
    if (bench)
        printf("{\"backend\": \"%s\", \"length\": %zu, \"candidates\": %llu, \"cpu_seconds\": %.6f, \"matches\": %llu}\n",
               argv[2], letters, count, seconds, matches);
    return 0;
}
