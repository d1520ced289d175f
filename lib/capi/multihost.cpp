// cairn C ABI — multihost checkpoints (per-process directories, collective restart).
#include "capi/handles.hpp"
#include "capi/options.hpp"
#include "capi/status.hpp"

using cairn::capi::deref;
using cairn::capi::guarded;
using cairn::capi::out_param;
using cairn::capi::text;

namespace {

cairn::MultihostCheckpoint& multihost_of(cairn_multihost* multihost) {
  return *deref(multihost, "multihost").multihost;
}

}  // namespace

extern "C" {

cairn_status cairn_multihost_options_init(cairn_multihost_options* options, size_t struct_size) {
  return guarded(__func__, [&] {
    cairn::capi::init_options(options, struct_size, cairn::capi::default_multihost_options(),
                              "options");
  });
}

cairn_status cairn_multihost_create(const cairn_comm* comm, const char* base,
                                    const cairn_multihost_options* options, cairn_multihost** out) {
  return guarded(__func__, [&] {
    out_param(out, "out");
    *out = nullptr;
    const auto& c = deref(comm, "comm");
    const std::string dir(text(base, "base"));
    auto handle = std::make_unique<cairn_multihost>();
    handle->comm = c.comm;
    handle->multihost = std::make_unique<cairn::MultihostCheckpoint>(
        *handle->comm, dir, cairn::capi::multihost_options(options));
    *out = handle.release();
  });
}

void cairn_multihost_free(cairn_multihost* multihost) { delete multihost; }

cairn_status cairn_multihost_restore_or_initialize(cairn_multihost* multihost, cairn_tree* state,
                                                   int64_t initial_step, int64_t* step) {
  return guarded(__func__, [&] {
    auto& m = multihost_of(multihost);
    auto& t = deref(state, "state");
    out_param(step, "step");
    t.before_restore();
    *step = m.restore_or_initialize(t.tree, initial_step);
    t.after_restore();
  });
}

cairn_status cairn_multihost_save(cairn_multihost* multihost, int64_t step,
                                  const cairn_tree* state) {
  return guarded(__func__,
                 [&] { multihost_of(multihost).save(step, deref(state, "state").to_save()); });
}

cairn_status cairn_multihost_restore(cairn_multihost* multihost, int64_t step, cairn_tree* state) {
  return guarded(__func__, [&] {
    auto& m = multihost_of(multihost);
    auto& t = deref(state, "state");
    t.before_restore();
    m.restore(step, t.tree);
    t.after_restore();
  });
}

cairn_status cairn_multihost_latest_common_step(cairn_multihost* multihost, int64_t* step,
                                                int* found) {
  return guarded(__func__, [&] {
    out_param(step, "step");
    out_param(found, "found");
    const auto latest = multihost_of(multihost).latest_common_step();
    *found = latest ? 1 : 0;
    *step = latest.value_or(0);
  });
}

}  // extern "C"
