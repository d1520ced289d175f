"""The h5py contender: the arrays of cairn_bench written and read collectively with h5py and
mpi4py, the way a Python HPC user would (one shared file, one dataset per leaf, each rank
its block as a collective hyperslab write), then read back twice: with collective hyperslab
reads, and with independent ones (each rank alone, as cairn reads). Run under mpiexec with Debian's python3:

    mpiexec -n 4 /usr/bin/python3 h5py_bench.py --dir D --rows R --cols C --leaves L --out F
"""
import os
import shutil
import sys

from mpi4py import MPI
import h5py
import numpy as np

import bench_data as bd


def main():
    a = bd.contender_parser().parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if not h5py.get_config().mpi:
        if rank == 0:
            print("h5py_bench: this h5py has no MPI support (install python3-h5py-mpi)",
                  file=sys.stderr)
        comm.Abort(1)
    rec = bd.Recorder(a.out) if rank == 0 else None
    box = bd.block_of(a.rows, a.cols, rank, size)
    r0, c0, rn, cn = box
    sel = np.s_[r0:r0 + rn, c0:c0 + cn]
    blocks = [bd.fill_block(a.rows, a.cols, leaf, box) for leaf in range(a.leaves)]
    back = [np.full_like(b, -1.0) for b in blocks]
    total = a.leaves * a.rows * a.cols * 8
    directory = os.path.join(a.dir, "h5py")
    path = os.path.join(directory, "data.h5")

    def drop():
        status = bd.drop_caches(not a.no_drop_caches) if rank == 0 else None
        status = comm.bcast(status, root=0)
        comm.Barrier()
        return status

    for rep in range(a.reps):
        if rank == 0:
            shutil.rmtree(directory, ignore_errors=True)
            os.makedirs(directory)
        comm.Barrier()
        drop()
        comm.Barrier()
        start = MPI.Wtime()
        with h5py.File(path, "w", driver="mpio", comm=comm) as f:
            for leaf in range(a.leaves):
                d = f.create_dataset(bd.leaf_path(leaf), (a.rows, a.cols), dtype="f8")
                with d.collective:
                    d[sel] = blocks[leaf]
            f.flush()  # MPI_File_sync under the MPI-IO driver
        comm.Barrier()
        seconds = MPI.Wtime() - start
        if rec:
            rec.add("h5py.write", rep, seconds, total)

        for name, collective in (("h5py.read", True), ("h5py.read_independent", False)):
            for x in back:
                x.fill(-1.0)
            status = drop()
            start = MPI.Wtime()
            with h5py.File(path, "r", driver="mpio", comm=comm) as f:
                for leaf in range(a.leaves):
                    d = f[bd.leaf_path(leaf)]
                    if collective:
                        with d.collective:
                            d.read_direct(back[leaf], source_sel=sel)
                    else:
                        d.read_direct(back[leaf], source_sel=sel)
            comm.Barrier()
            seconds = MPI.Wtime() - start
            bad = comm.allreduce(int(any(not np.array_equal(x, y) for x, y in zip(blocks, back))))
            if bad:
                if rank == 0:
                    print(f"h5py_bench: data read back ({name}) differs from the data written",
                          file=sys.stderr)
                comm.Abort(1)
            if rec:
                rec.add(name, rep, seconds, total, page_cache=status)
    comm.Barrier()
    if rank == 0:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
