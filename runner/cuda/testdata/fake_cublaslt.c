/* A stand-in for libcublasLt with the signatures of cublasLt.h (CUDA 12
 * and 13), for TestLtABI: each entry point records what it received in
 * fake_log, which the test reads back through purego. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
	cublasLtMatmulAlgo_t algo;
	size_t workspaceSize;
	int state;
	float wavesCount;
	int reserved[4];
} cublasLtMatmulHeuristicResult_t;

static char log_buf[8192];
static uintptr_t next_handle = 0x1000;

static void logf_(const char *format, ...) {
	size_t n = strlen(log_buf);
	va_list ap;
	va_start(ap, format);
	vsnprintf(log_buf + n, sizeof log_buf - n, format, ap);
	va_end(ap);
}

const char *fake_log(void) { return log_buf; }
void fake_reset(void) { log_buf[0] = 0; }

static void *new_handle(void) { return (void *)(next_handle += 0x10); }

int cublasLtCreate(void **handle) { *handle = new_handle(); logf_("create %p;", *handle); return 0; }
int cublasLtDestroy(void *handle) { logf_("destroy %p;", handle); return 0; }
size_t cublasLtGetVersion(void) { return 130100; }

int cublasLtMatmulDescCreate(void **desc, int computeType, int scaleType) {
	*desc = new_handle();
	logf_("desc %d %d;", computeType, scaleType);
	return 0;
}
int cublasLtMatmulDescDestroy(void *desc) { logf_("desc destroy;"); return 0; }
int cublasLtMatmulDescSetAttribute(void *desc, int attr, const void *buf, size_t size) {
	logf_("desc attr %d = %d (%zu bytes);", attr, *(const int32_t *)buf, size);
	return 0;
}

int cublasLtMatrixLayoutCreate(void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	*layout = new_handle();
	logf_("layout %d %llux%llu ld %lld;", type, (unsigned long long)rows, (unsigned long long)cols, (long long)ld);
	return 0;
}
int cublasLtMatrixLayoutDestroy(void *layout) { logf_("layout destroy;"); return 0; }

int cublasLtMatmulPreferenceCreate(void **pref) { *pref = new_handle(); return 0; }
int cublasLtMatmulPreferenceDestroy(void *pref) { logf_("pref destroy;"); return 0; }
int cublasLtMatmulPreferenceSetAttribute(void *pref, int attr, const void *buf, size_t size) {
	logf_("pref attr %d = %llu (%zu bytes);", attr, (unsigned long long)*(const uint64_t *)buf, size);
	return 0;
}

/* Two algorithms: data[0] = 100 + i, data[7] = 0xabc; the second is not
 * supported (state 15). */
int cublasLtMatmulAlgoGetHeuristic(void *handle, void *desc, void *a, void *b, void *c, void *d, void *pref,
                                   int requested, cublasLtMatmulHeuristicResult_t *results, int *returned) {
	logf_("heuristic %d c==d %d;", requested, c == d);
	for (int i = 0; i < 2 && i < requested; i++) {
		memset(&results[i], 0, sizeof results[i]);
		results[i].algo.data[0] = 100 + i;
		results[i].algo.data[7] = 0xabc;
		results[i].workspaceSize = 4096;
		results[i].state = i == 0 ? 0 : 15;
		results[i].wavesCount = 0.75f;
	}
	*returned = requested < 2 ? requested : 2;
	return 0;
}

/* Attribute a of algorithm x reads as 10*x.data[0] + a, in its width. */
int cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo, int attr, void *buf, size_t size,
                                         size_t *written) {
	uint64_t v = 10 * algo->data[0] + (uint64_t)attr;
	if (size == 2)
		*(uint16_t *)buf = (uint16_t)v;
	else if (size == 4)
		*(uint32_t *)buf = (uint32_t)v;
	else
		return 7;
	*written = size;
	return 0;
}

int cublasLtMatmul(void *handle, void *desc, const void *alpha, const void *A, void *Adesc, const void *B, void *Bdesc,
                   const void *beta, const void *C, void *Cdesc, void *D, void *Ddesc, const cublasLtMatmulAlgo_t *algo,
                   void *workspace, size_t workspaceSize, void *stream) {
	logf_("matmul h %p desc %p alpha %g beta %g A %p/%p B %p/%p C %p/%p D %p/%p algo %llu..%llx ws %p+%zu stream %p;",
	      handle, desc, *(const float *)alpha, *(const float *)beta, A, Adesc, B, Bdesc, C, Cdesc, D, Ddesc,
	      (unsigned long long)algo->data[0], (unsigned long long)algo->data[7], workspace, workspaceSize, stream);
	return 0;
}
