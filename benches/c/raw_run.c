/*
 * raw_run.c: the baseline for onnxrt's CPU benchmarks, the ONNX Runtime C API used directly.
 *
 * The library is opened with dlopen (the path given), the API table is asked for version 16
 * (ORT 1.16; the headers may be newer, which is fine: the table only grows), and one session is
 * made with the options every benchmark uses: 1 intra-op thread, sequential execution, all graph
 * optimizations. Input tensors are created once over caller-owned memory
 * (CreateTensorWithDataAsOrtValue); the timed loop is then
 *
 *   Run(session, NULL, names, values, n, out_names, n_out, outputs); ReleaseValue(outputs[i]);
 *
 * (mode "run"), or RunWithBinding on an IoBinding whose inputs and preallocated outputs were
 * bound once (mode "binding"), or the whole round trip a caller writes around Run (mode
 * "roundtrip", raw_roundtrip): wrap the existing input buffers (CreateTensorWithDataAsOrtValue),
 * Run, read output 0's data pointer (GetTensorMutableData) and one element, ReleaseValue the
 * output and the inputs.
 *
 * Used twice:
 *  - compiled into the Rust benchmark (benches/build.rs, the `cc` crate) and called through
 *    raw_open / raw_loop / raw_close, so it is timed in the same process as onnxrt;
 *  - as a standalone program (-DRAW_RUN_MAIN, benches/scripts/run-cpu.sh) that times itself:
 *      raw_run LIBRARY MODEL CASE MODE [SAMPLES] [BATCH]
 *    CASE is add1 | add1mb | mlp; MODE is run | binding. Prints one line:
 *      raw_run CASE MODE median_ns=... min_ns=... samples=... batch=...
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <onnxruntime_c_api.h>

#define RAW_MAX_IO 4
#define RAW_MAX_RANK 8
#define RAW_API_VERSION 16

typedef struct raw_bench {
  const OrtApi *api;
  OrtEnv *env;
  OrtSessionOptions *options;
  OrtSession *session;
  OrtMemoryInfo *memory;
  OrtIoBinding *binding;
  size_t n_in, n_out;
  const char *in_names[RAW_MAX_IO];
  const char *out_names[RAW_MAX_IO];
  OrtValue *in_values[RAW_MAX_IO];
  OrtValue *bound_out[RAW_MAX_IO];
  float *in_data[RAW_MAX_IO];
  float *out_data[RAW_MAX_IO];
  int64_t in_shape[RAW_MAX_RANK];
  size_t in_rank, in_len;
  float sink; /* what the round trip read, so the read is not optimised away */
} raw_bench;

/* Writes ORT's message into err and releases the status; returns 1 if there was an error. */
static int failed(const OrtApi *api, OrtStatus *status, const char *what, char *err, size_t err_len) {
  if (status == NULL) return 0;
  if (err != NULL && err_len > 0) snprintf(err, err_len, "%s: %s", what, api->GetErrorMessage(status));
  api->ReleaseStatus(status);
  return 1;
}

#define TRY(call)                                                  \
  do {                                                             \
    if (failed(b->api, (call), #call, err, err_len)) goto fail;    \
  } while (0)

void raw_close(raw_bench *b);

/*
 * Opens `library`, makes a session on `model`, and creates `n_in` float tensors of shape
 * `in_shape` (filled with 1.0) plus, for mode "binding", `n_out` preallocated float outputs of
 * `out_shape`, bound once. Returns NULL with a message in err on failure.
 */
raw_bench *raw_open(const char *library, const char *model, size_t n_in, const char *const *in_names,
                    const int64_t *in_shape, size_t in_rank, size_t n_out, const char *const *out_names,
                    const int64_t *out_shape, size_t out_rank, char *err, size_t err_len) {
  if (n_in > RAW_MAX_IO || n_out > RAW_MAX_IO || in_rank > RAW_MAX_RANK) {
    snprintf(err, err_len, "at most %d inputs and outputs, rank %d", RAW_MAX_IO, RAW_MAX_RANK);
    return NULL;
  }
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    snprintf(err, err_len, "dlopen: %s", dlerror());
    return NULL;
  }
  const OrtApiBase *(*get_base)(void) = (const OrtApiBase *(*)(void))dlsym(handle, "OrtGetApiBase");
  if (get_base == NULL) {
    snprintf(err, err_len, "dlsym OrtGetApiBase: %s", dlerror());
    return NULL;
  }
  raw_bench *b = calloc(1, sizeof *b);
  b->api = get_base()->GetApi(RAW_API_VERSION);
  if (b->api == NULL) {
    snprintf(err, err_len, "GetApi(%d) returned NULL", RAW_API_VERSION);
    free(b);
    return NULL;
  }
  TRY(b->api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "raw_run", &b->env));
  TRY(b->api->CreateSessionOptions(&b->options));
  TRY(b->api->SetIntraOpNumThreads(b->options, 1));
  TRY(b->api->SetSessionExecutionMode(b->options, ORT_SEQUENTIAL));
  TRY(b->api->SetSessionGraphOptimizationLevel(b->options, ORT_ENABLE_ALL));
  TRY(b->api->CreateSession(b->env, model, b->options, &b->session));
  TRY(b->api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &b->memory));

  size_t in_len = 1, out_len = 1;
  for (size_t i = 0; i < in_rank; i++) in_len *= (size_t)in_shape[i];
  for (size_t i = 0; i < out_rank; i++) out_len *= (size_t)out_shape[i];
  b->n_in = n_in;
  b->n_out = n_out;
  b->in_rank = in_rank;
  b->in_len = in_len;
  for (size_t i = 0; i < in_rank; i++) b->in_shape[i] = in_shape[i];
  for (size_t i = 0; i < n_in; i++) {
    b->in_names[i] = in_names[i];
    b->in_data[i] = malloc(in_len * sizeof(float));
    for (size_t j = 0; j < in_len; j++) b->in_data[i][j] = 1.0f;
    TRY(b->api->CreateTensorWithDataAsOrtValue(b->memory, b->in_data[i], in_len * sizeof(float), in_shape, in_rank,
                                               ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &b->in_values[i]));
  }
  TRY(b->api->CreateIoBinding(b->session, &b->binding));
  for (size_t i = 0; i < n_out; i++) {
    b->out_names[i] = out_names[i];
    b->out_data[i] = calloc(out_len, sizeof(float));
    TRY(b->api->CreateTensorWithDataAsOrtValue(b->memory, b->out_data[i], out_len * sizeof(float), out_shape,
                                               out_rank, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &b->bound_out[i]));
    TRY(b->api->BindOutput(b->binding, out_names[i], b->bound_out[i]));
  }
  for (size_t i = 0; i < n_in; i++) TRY(b->api->BindInput(b->binding, in_names[i], b->in_values[i]));
  return b;
fail:
  raw_close(b);
  return NULL;
}

/* `iters` runs; binding != 0 uses RunWithBinding. Returns 0, or 1 with a message in err. */
int raw_loop(raw_bench *b, long iters, int binding, char *err, size_t err_len) {
  const OrtApi *api = b->api;
  OrtValue *outputs[RAW_MAX_IO];
  for (long k = 0; k < iters; k++) {
    if (binding) {
      if (failed(api, api->RunWithBinding(b->session, NULL, b->binding), "RunWithBinding", err, err_len)) return 1;
      continue;
    }
    for (size_t i = 0; i < b->n_out; i++) outputs[i] = NULL;
    OrtStatus *status = api->Run(b->session, NULL, b->in_names, (const OrtValue *const *)b->in_values, b->n_in,
                                 b->out_names, b->n_out, outputs);
    for (size_t i = 0; i < b->n_out; i++) {
      if (outputs[i] != NULL) api->ReleaseValue(outputs[i]);
    }
    if (failed(api, status, "Run", err, err_len)) return 1;
  }
  return 0;
}

/*
 * `iters` round trips: per call, wrap each input buffer as a tensor, Run, read output 0's first
 * element through GetTensorMutableData, release the outputs and the inputs. Returns 0, or 1 with
 * a message in err.
 */
int raw_roundtrip(raw_bench *b, long iters, char *err, size_t err_len) {
  const OrtApi *api = b->api;
  OrtValue *inputs[RAW_MAX_IO];
  OrtValue *outputs[RAW_MAX_IO];
  for (long k = 0; k < iters; k++) {
    for (size_t i = 0; i < b->n_in; i++) {
      inputs[i] = NULL;
      if (failed(api,
                 api->CreateTensorWithDataAsOrtValue(b->memory, b->in_data[i], b->in_len * sizeof(float), b->in_shape,
                                                     b->in_rank, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &inputs[i]),
                 "CreateTensorWithDataAsOrtValue", err, err_len))
        return 1;
    }
    for (size_t i = 0; i < b->n_out; i++) outputs[i] = NULL;
    OrtStatus *status = api->Run(b->session, NULL, b->in_names, (const OrtValue *const *)inputs, b->n_in,
                                 b->out_names, b->n_out, outputs);
    int bad = failed(api, status, "Run", err, err_len);
    if (!bad) {
      void *data = NULL;
      bad = failed(api, api->GetTensorMutableData(outputs[0], &data), "GetTensorMutableData", err, err_len);
      if (!bad) b->sink += ((const float *)data)[0];
    }
    for (size_t i = 0; i < b->n_out; i++) {
      if (outputs[i] != NULL) api->ReleaseValue(outputs[i]);
    }
    for (size_t i = 0; i < b->n_in; i++) api->ReleaseValue(inputs[i]);
    if (bad) return 1;
  }
  return 0;
}

/* First element of output 0 after a binding run (a check that the runs really happened). */
float raw_bound_output0(const raw_bench *b) { return b->out_data[0] != NULL ? b->out_data[0][0] : 0.0f; }

void raw_close(raw_bench *b) {
  if (b == NULL) return;
  const OrtApi *api = b->api;
  if (b->binding) api->ReleaseIoBinding(b->binding);
  for (size_t i = 0; i < RAW_MAX_IO; i++) {
    if (b->in_values[i]) api->ReleaseValue(b->in_values[i]);
    if (b->bound_out[i]) api->ReleaseValue(b->bound_out[i]);
    free(b->in_data[i]);
    free(b->out_data[i]);
  }
  if (b->memory) api->ReleaseMemoryInfo(b->memory);
  if (b->session) api->ReleaseSession(b->session);
  if (b->options) api->ReleaseSessionOptions(b->options);
  if (b->env) api->ReleaseEnv(b->env);
  free(b);
}

#ifdef RAW_RUN_MAIN
static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: raw_run LIBRARY MODEL add1|add1mb|mlp run|binding [SAMPLES] [BATCH]\n");
    return 2;
  }
  const char *library = argv[1], *model = argv[2], *which = argv[3], *mode = argv[4];
  long samples = argc > 5 ? atol(argv[5]) : 30;
  long batch = argc > 6 ? atol(argv[6]) : 0;
  static const char *add_in[] = {"a", "b"}, *add_out[] = {"sum"}, *mlp_in[] = {"x"}, *mlp_out[] = {"logits"};
  int64_t one[] = {1}, mb[] = {262144}, mlp_x[] = {1, 16}, mlp_y[] = {1, 4};
  char err[1024] = "";
  raw_bench *b;
  if (strcmp(which, "add1") == 0) {
    b = raw_open(library, model, 2, add_in, one, 1, 1, add_out, one, 1, err, sizeof err);
  } else if (strcmp(which, "add1mb") == 0) {
    b = raw_open(library, model, 2, add_in, mb, 1, 1, add_out, mb, 1, err, sizeof err);
  } else if (strcmp(which, "mlp") == 0) {
    b = raw_open(library, model, 1, mlp_in, mlp_x, 2, 1, mlp_out, mlp_y, 2, err, sizeof err);
  } else {
    fprintf(stderr, "unknown case %s\n", which);
    return 2;
  }
  if (b == NULL) {
    fprintf(stderr, "raw_run: %s\n", err);
    return 1;
  }
  int binding = strcmp(mode, "binding") == 0;
  /* Warm up, then pick a batch that lasts about 10 ms, like the Rust harness. */
  int64_t t0 = now_ns();
  if (raw_loop(b, 200, binding, err, sizeof err)) goto fail;
  int64_t per = (now_ns() - t0) / 200;
  if (batch <= 0) batch = per > 0 ? 10000000 / per : 1000;
  if (batch < 1) batch = 1;
  int64_t *ns = calloc((size_t)samples, sizeof *ns);
  for (long s = 0; s < samples; s++) {
    int64_t start = now_ns();
    if (raw_loop(b, batch, binding, err, sizeof err)) goto fail;
    ns[s] = (now_ns() - start) / batch;
  }
  qsort(ns, (size_t)samples, sizeof *ns, cmp_i64);
  printf("raw_run %s %s median_ns=%lld min_ns=%lld samples=%ld batch=%ld\n", which, mode,
         (long long)ns[samples / 2], (long long)ns[0], samples, batch);
  free(ns);
  raw_close(b);
  return 0;
fail:
  fprintf(stderr, "raw_run: %s\n", err);
  raw_close(b);
  return 1;
}
#endif
