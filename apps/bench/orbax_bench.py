"""The Orbax contender: the same arrays as cairn_bench, whole, in one process (Orbax's
single-host use), saved and restored with orbax-checkpoint: a Checkpointer with
StandardSave/StandardRestore, a CheckpointManager with async checkpointing, and the
metadata-heavy tree. Run with the Python of the virtual environment scripts/bench.sh makes:

    python orbax_bench.py --dir D --rows R --cols C --leaves L --meta-leaves M --out F
"""
import os
import shutil

import jax

jax.config.update("jax_enable_x64", True)  # float64 arrays, as in every other contender

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import orbax.checkpoint as ocp  # noqa: E402

import bench_data as bd  # noqa: E402


def nest(paths_and_values):
    """A nested dict from 'a/b/c' paths (Orbax's pytree of the same leaf paths)."""
    tree = {}
    for path, value in paths_and_values:
        node = tree
        parts = path.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return tree


def block(tree):
    jax.tree_util.tree_map(lambda x: x.block_until_ready(), tree)
    return tree


def same(a, b):
    equal = jax.tree_util.tree_map(lambda x, y: bool(np.array_equal(np.asarray(x), np.asarray(y))),
                                   a, b)
    return all(jax.tree_util.tree_leaves(equal))


def main():
    p = bd.contender_parser()
    p.add_argument("--meta-leaves", type=int, required=True)
    p.add_argument("--meta-elems", type=int, default=512)
    a = p.parse_args()
    rec = bd.Recorder(a.out)
    drop = not a.no_drop_caches
    base = os.path.join(a.dir, "orbax")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)

    whole = (0, 0, a.rows, a.cols)
    tree = block(nest((bd.leaf_path(leaf), jnp.asarray(bd.fill_block(a.rows, a.cols, leaf, whole)))
                      for leaf in range(a.leaves)))
    total = a.leaves * a.rows * a.cols * 8
    meta = block(nest((bd.meta_path(leaf), jnp.asarray(bd.meta_value(leaf, a.meta_elems)))
                      for leaf in range(a.meta_leaves)))
    meta_total = a.meta_leaves * a.meta_elems * 8

    ckptr = ocp.Checkpointer(ocp.StandardCheckpointHandler())

    def save_restore(name, value, nbytes, extra):
        abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, value)
        for rep in range(a.reps):
            path = os.path.join(base, name)
            shutil.rmtree(path, ignore_errors=True)
            bd.drop_caches(drop)
            start = bd.now()
            ckptr.save(path, args=ocp.args.StandardSave(value))
            rec.add(f"orbax.{name}_save" if name == "meta" else "orbax.save_sync", rep,
                    bd.now() - start, nbytes, **extra)
            status = bd.drop_caches(drop)
            start = bd.now()
            restored = block(ckptr.restore(path, args=ocp.args.StandardRestore(abstract)))
            seconds = bd.now() - start
            if rep == 0 and not same(value, restored):
                raise SystemExit(f"orbax_bench: {name}: restored data differs from the data saved")
            del restored
            rec.add(f"orbax.{name}_restore" if name == "meta" else "orbax.restore", rep,
                    seconds, nbytes, page_cache=status, **extra)
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)

    save_restore("tree", tree, total, {})

    # CheckpointManager with async checkpointing: time until save() returns, and until done.
    root = os.path.join(base, "manager")
    options = ocp.CheckpointManagerOptions(enable_async_checkpointing=True, max_to_keep=1)
    with ocp.CheckpointManager(root, options=options) as manager:
        for rep in range(a.reps):
            bd.drop_caches(drop)
            start = bd.now()
            manager.save(rep, args=ocp.args.StandardSave(tree))
            blocking = bd.now() - start
            manager.wait_until_finished()
            rec.add("orbax.save_async", rep, blocking, total, total_seconds=bd.now() - start)
    shutil.rmtree(root, ignore_errors=True)

    save_restore("meta", meta, meta_total, {"leaves": a.meta_leaves})
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
