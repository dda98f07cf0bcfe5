// A shared-memory arena between a node and one of its runners: a memfd the node makes, sealed so
// that its size never changes (the runner cannot shrink it under the node's mapping: no SIGBUS
// there, whatever the runner does), mapped read-write by both processes. Sparse: pages exist once
// written. Request tensors and bodies, and response tensors, are written there and named by offset
// in the channel's messages (runtime/runner/wire/arena.ts).
#pragma once

#include <napi.h>

namespace hearth {

// arenaCreate(bytes) → { fd, buffer }: a new sealed memfd of `bytes` and the node's mapping of it.
Napi::Value ArenaCreate(const Napi::CallbackInfo& info);
// arenaMap(fd) → ArrayBuffer: a runner's mapping of the arena it inherited as `fd` (its whole,
// sealed size); throws unless the fd is a memfd sealed against shrinking.
Napi::Value ArenaMap(const Napi::CallbackInfo& info);

}  // namespace hearth
