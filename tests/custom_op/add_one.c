/* A custom-operator library for the tests (SessionBuilder::custom_op_library): the domain
 * "ai.onnxrt.test" with one operator, AddOne (float tensor in, the same plus one out), written
 * against the C API only. Built into OUT_DIR by tests/build.rs. */
#include <string.h>

#include <onnxruntime_c_api.h>

static const OrtApi *ort;
static OrtCustomOp add_one;

/* Stops at the first failing call; the status is released (a kernel cannot return it). */
#define TRY(call)                       \
  do {                                  \
    OrtStatus *status_ = (call);        \
    if (status_) {                      \
      ort->ReleaseStatus(status_);      \
      return;                           \
    }                                   \
  } while (0)

static void *create_kernel(const OrtCustomOp *op, const OrtApi *api, const OrtKernelInfo *info) {
  (void)op;
  (void)info;
  return (void *)api;
}

static const char *name(const OrtCustomOp *op) { (void)op; return "AddOne"; }
static const char *provider(const OrtCustomOp *op) { (void)op; return "CPUExecutionProvider"; }
static ONNXTensorElementDataType float_type(const OrtCustomOp *op, size_t index) {
  (void)op;
  (void)index;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static size_t one(const OrtCustomOp *op) { (void)op; return 1; }

static void compute(void *kernel, OrtKernelContext *context) {
  const OrtApi *api = kernel;
  const OrtValue *input = NULL;
  TRY(api->KernelContext_GetInput(context, 0, &input));
  OrtTensorTypeAndShapeInfo *info = NULL;
  TRY(api->GetTensorTypeAndShape(input, &info));
  size_t rank = 0, count = 0;
  int64_t dims[8] = {0};
  OrtStatus *status = api->GetDimensionsCount(info, &rank);
  if (!status && rank <= 8) status = api->GetDimensions(info, dims, rank);
  if (!status) status = api->GetTensorShapeElementCount(info, &count);
  api->ReleaseTensorTypeAndShapeInfo(info);
  if (status || rank > 8) {
    if (status) api->ReleaseStatus(status);
    return;
  }
  OrtValue *output = NULL;
  TRY(api->KernelContext_GetOutput(context, 0, dims, rank, &output));
  float *x = NULL, *y = NULL;
  TRY(api->GetTensorMutableData((OrtValue *)input, (void **)&x));
  TRY(api->GetTensorMutableData(output, (void **)&y));
  for (size_t i = 0; i < count; i++) y[i] = x[i] + 1.0f;
}

static void destroy(void *kernel) { (void)kernel; }

/* The optional members ORT reads for an operator of this version. */
static OrtCustomOpInputOutputCharacteristic required(const OrtCustomOp *op, size_t index) {
  (void)op;
  (void)index;
  return INPUT_OUTPUT_REQUIRED;
}
static OrtMemType default_memory(const OrtCustomOp *op, size_t index) {
  (void)op;
  (void)index;
  return OrtMemTypeDefault;
}
static int min_arity(const OrtCustomOp *op) { (void)op; return 1; }
static int homogeneous(const OrtCustomOp *op) { (void)op; return 1; }
static int start_version(const OrtCustomOp *op) { (void)op; return 1; }
static int end_version(const OrtCustomOp *op) { (void)op; return 2147483647; }

/* The entry point ORT looks up in a custom-op library. The domain lives as long as the process. */
OrtStatus *RegisterCustomOps(OrtSessionOptions *options, const OrtApiBase *base) {
  ort = base->GetApi(16);
  memset(&add_one, 0, sizeof add_one);
  add_one.version = 16;
  add_one.CreateKernel = create_kernel;
  add_one.GetName = name;
  add_one.GetExecutionProviderType = provider;
  add_one.GetInputType = float_type;
  add_one.GetInputTypeCount = one;
  add_one.GetOutputType = float_type;
  add_one.GetOutputTypeCount = one;
  add_one.KernelCompute = compute;
  add_one.KernelDestroy = destroy;
  add_one.GetInputCharacteristic = required;
  add_one.GetOutputCharacteristic = required;
  add_one.GetInputMemoryType = default_memory;
  add_one.GetVariadicInputMinArity = min_arity;
  add_one.GetVariadicInputHomogeneity = homogeneous;
  add_one.GetVariadicOutputMinArity = min_arity;
  add_one.GetVariadicOutputHomogeneity = homogeneous;
  add_one.GetStartVersion = start_version;
  add_one.GetEndVersion = end_version;
  OrtCustomOpDomain *domain = NULL;
  OrtStatus *status = ort->CreateCustomOpDomain("ai.onnxrt.test", &domain);
  if (status) return status;
  status = ort->CustomOpDomain_Add(domain, &add_one);
  if (status) return status;
  return ort->AddCustomOpDomain(options, domain);
}
