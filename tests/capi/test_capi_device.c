/* Device memory through the C ABI: a leaf declared CAIRN_MEMORY_CUDA_DEVICE in a
 * cairn_array_desc. Without a usable CUDA device, saving it fails on every rank with
 * CAIRN_ERR_UNSUPPORTED naming the leaf and why there is no device, and nothing is committed.
 * With a device (builds that link the CUDA runtime, CAIRN_TEST_CUDART), a cudaMalloc buffer
 * is saved, cleared and restored, and an async save with async_device_staging snapshots it on
 * the device. Exits non-zero on any failure. */
#include <cairn/cairn.h>

#include <stdio.h>
#include <string.h>

#include "capi_test.h"

#if CAIRN_TEST_CUDART
#include <cuda_runtime_api.h>
#endif

enum { N = 16 };

/* The number of CUDA devices this process can use (0 when the runtime reports none or fails);
 * with some, selects device rank % count. */
static int device_count(int rank) {
#if CAIRN_TEST_CUDART
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (count > 0) CHECK(cudaSetDevice(rank % count) == cudaSuccess);
  return count;
#else
  (void)rank;
  return 0;
#endif
}

/* A tree with one float64 leaf "fields/on_gpu": this rank's N elements at `data`, declared
 * as device memory. */
static cairn_tree* device_tree(void* data, const int64_t* global, const int64_t* offset) {
  const int64_t local = N;
  cairn_array_desc desc;
  cairn_tree* tree = NULL;
  CHECK_OK(cairn_array_desc_init(&desc, sizeof desc));
  CHECK(desc.memory == CAIRN_MEMORY_HOST);
  desc.dtype = CAIRN_FLOAT64;
  desc.ndim = 1;
  desc.global_dims = global;
  desc.offset = offset;
  desc.local_dims = &local;
  desc.data = data;
  desc.memory = CAIRN_MEMORY_CUDA_DEVICE;
  CHECK_OK(cairn_tree_create(&tree));
  /* Adding does not look for a device: saving and restoring do. */
  CHECK_OK(cairn_tree_add_array_desc(tree, "fields/on_gpu", &desc));
  return tree;
}

static cairn_manager* sync_manager(const cairn_comm* comm, const char* name) {
  cairn_manager_options o;
  cairn_manager* m = NULL;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.enable_async = 0;
  o.barrier_timeout_s = 120;
  CHECK_OK(cairn_manager_create(comm, capi_test_path(name), &o, &m));
  return m;
}

/* A host pointer declared as device memory, on a machine without a usable device. */
static void without_device(const cairn_comm* comm, int rank, int size) {
  double host[N];
  const int64_t global = (int64_t)N * size;
  const int64_t offset = (int64_t)N * rank;
  cairn_manager* m = sync_manager(comm, "no_device");
  cairn_tree* tree;
  int64_t step = -1;
  int found = -1;
  int i;
  for (i = 0; i < N; ++i) host[i] = i;
  tree = device_tree(host, &global, &offset);
  CHECK_STATUS(cairn_manager_save(m, 1, tree, NULL, NULL), CAIRN_ERR_UNSUPPORTED,
               "leaf 'fields/on_gpu' is in CUDA device memory");
  /* The reason: what the CUDA runtime said, or that this build has no CUDA at all. */
  CHECK(strstr(cairn_last_error(), CAIRN_TEST_CUDART ? "no CUDA device is" : "no CUDA support") !=
        NULL);
  CHECK_OK(cairn_manager_latest_step(m, &step, &found));
  CHECK(found == 0);
  cairn_tree_free(tree);
  CHECK_OK(cairn_manager_free(m));
}

#if CAIRN_TEST_CUDART
/* cudaMalloc memory saved from and restored into the device. */
static void with_device(const cairn_comm* comm, int rank, int size) {
  double host[N];
  double back[N];
  const int64_t global = (int64_t)N * size;
  const int64_t offset = (int64_t)N * rank;
  cairn_manager* m = sync_manager(comm, "device");
  cairn_tree* tree;
  void* device = NULL;
  int saved = 0;
  int i;
  for (i = 0; i < N; ++i) host[i] = 1000.0 * rank + i;
  CHECK(cudaMalloc(&device, sizeof host) == cudaSuccess);
  CHECK(cudaMemcpy(device, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess);
  tree = device_tree(device, &global, &offset);
  CHECK_OK(cairn_manager_save(m, 1, tree, NULL, &saved));
  CHECK(saved == 1);
  CHECK(cudaMemset(device, 0, sizeof host) == cudaSuccess);
  CHECK_OK(cairn_manager_restore(m, CAIRN_STEP_LATEST, tree, NULL));
  CHECK(cudaMemcpy(back, device, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(memcmp(back, host, sizeof host) == 0);
  cairn_tree_free(tree);
  CHECK(cudaFree(device) == cudaSuccess);
  CHECK_OK(cairn_manager_free(m));
}

/* async_device_staging: an async zero-copy save snapshots the device leaf into device memory
 * before save() returns, so clearing the buffer at once does not reach the checkpoint. Without
 * the device snapshot a zero-copy save writes from the caller's buffer later, and the clear
 * would be written. */
static void with_device_staging(const cairn_comm* comm, int rank, int size) {
  double host[N];
  double back[N];
  const int64_t global = (int64_t)N * size;
  const int64_t offset = (int64_t)N * rank;
  cairn_manager_options o;
  cairn_manager* m = NULL;
  cairn_tree* tree;
  void* device = NULL;
  int saved = 0;
  int i;
  CHECK_OK(cairn_manager_options_init(&o, sizeof o));
  o.barrier_timeout_s = 120;
  o.async_zero_copy = 1;
  o.async_device_staging = 1;
  CHECK_OK(cairn_manager_create(comm, capi_test_path("device_staging"), &o, &m));
  for (i = 0; i < N; ++i) host[i] = 2000.0 * rank + i;
  CHECK(cudaMalloc(&device, sizeof host) == cudaSuccess);
  CHECK(cudaMemcpy(device, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess);
  tree = device_tree(device, &global, &offset);
  CHECK_OK(cairn_manager_save(m, 1, tree, NULL, &saved));
  CHECK(saved == 1);
  CHECK(cudaMemset(device, 0, sizeof host) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK_OK(cairn_manager_wait_until_finished(m));
  CHECK_OK(cairn_manager_restore(m, 1, tree, NULL));
  CHECK(cudaMemcpy(back, device, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(memcmp(back, host, sizeof host) == 0);
  cairn_tree_free(tree);
  CHECK(cudaFree(device) == cudaSuccess);
  CHECK_OK(cairn_manager_free(m));
}
#endif

int main(int argc, char** argv) {
  capi_test_world w = capi_test_start(&argc, &argv);
  int devices = device_count(w.rank);
  /* Every rank takes the same branch (a rank without a device makes it the error case). */
  MPI_Allreduce(MPI_IN_PLACE, &devices, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (devices == 0) {
    without_device(w.comm, w.rank, w.size);
  } else {
#if CAIRN_TEST_CUDART
    with_device(w.comm, w.rank, w.size);
    with_device_staging(w.comm, w.rank, w.size);
#endif
  }
  return capi_test_end(
      &w, "test_capi_device",
      devices == 0 ? "(no CUDA device: the device leaf is an error; the device round trip and "
                     "async_device_staging were skipped)"
                   : "(device round trip, async_device_staging)");
}
