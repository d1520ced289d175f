// cairn — every C++ header of cairn in one include, for programs that use several areas:
//   #include <cairn/cairn.hpp>
// Each per-area header (<cairn/manager.hpp>, <cairn/storage.hpp>, ...) also works alone. The
// C API is <cairn/cairn.h>.
#pragma once

#include <cairn/config.hpp>

// base and comm: errors, logging, the communicator
#include <cairn/comm.hpp>
#include <cairn/error.hpp>
#include <cairn/log.hpp>

// tree: array trees, boxes, dtypes
#include <cairn/box.hpp>
#include <cairn/dtype.hpp>
#include <cairn/layout.hpp>
#include <cairn/tree.hpp>
#include <cairn/type_handler.hpp>

// storage: save, restore and verify one array tree
#include <cairn/storage.hpp>

// handlers and checkpoint: items, one checkpoint, sync and async
#include <cairn/checkpointer.hpp>
#include <cairn/handler.hpp>
#include <cairn/handlers.hpp>
#include <cairn/standard_checkpointer.hpp>

// manager: a series of steps, and the checkpoint root it keeps them in
#include <cairn/checkpoint_root.hpp>
#include <cairn/levels.hpp>
#include <cairn/manager.hpp>
#include <cairn/multihost.hpp>
#include <cairn/policies.hpp>
#include <cairn/preemption.hpp>
