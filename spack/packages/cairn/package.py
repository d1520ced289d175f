# Spack recipe for cairn. spack/ of the source tree is a package repository layout; use it
# through a repository of your own:
#   spack repo create myrepo && cp -r spack/packages/cairn myrepo/packages/
#   spack repo add myrepo && spack install cairn +hdf5 ^openmpi
# or build this checkout directly: spack dev-build -d . cairn@main
# `spack install --test=root cairn` also builds the test suite and runs it (check()).

from spack.package import *


class Cairn(CMakePackage, CudaPackage):
    """Checkpoint/restart and array I/O for MPI programs: collective, atomic checkpoints of
    distributed arrays in parallel HDF5 or file-per-process files, with restart on a
    different number of ranks, async saves, and C, C++ and Fortran APIs."""

    # cairn has no public home yet: these two addresses are reserved names, so build a local
    # checkout with `spack dev-build -d <checkout> cairn@main` until they are set.
    homepage = "https://example.invalid/cairn"
    git = "https://example.invalid/cairn.git"

    license("Apache-2.0")

    version("main", branch="main")

    # Where the install puts the HDF5 zstd filter plugin, under the prefix.
    PLUGIN_DIR = join_path("lib", "hdf5", "plugin")

    variant("shared", default=True, description="Build a shared library")
    variant("hdf5", default=True, description="Parallel HDF5 storage format")
    variant("nccl", default=False, description="NCCL broadcast of device arrays (needs +cuda)")
    variant("fortran", default=True, description="Fortran module over the C API")
    variant("zstd", default=True, description="Lossless compression of stored arrays (zstd)")
    variant("zfp", default=False, description="Error-bounded lossy compression (ZFP)")
    variant("docs", default=False, description="API reference (Doxygen) in share/doc/cairn/html")
    # +cuda and cuda_arch come from CudaPackage.

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")  # cairn.pc refers to the MPI's own .pc when found

    depends_on("mpi")
    depends_on("boost@1.81: +json")
    depends_on("xxhash")
    depends_on("spdlog")
    depends_on("fmt")
    depends_on("cli11@2.1:", type="build")  # argument parsing in the command-line tool
    depends_on("hdf5@1.10.5: +mpi", when="+hdf5")
    depends_on("nccl", when="+nccl")
    depends_on("zstd", when="+zstd")
    depends_on("zfp", when="+zfp")
    depends_on("doxygen", type="build", when="+docs")
    depends_on("python@3:", type="build", when="+docs")  # Doxygen's input filters
    depends_on("googletest", type="test")

    conflicts("+nccl", when="~cuda", msg="NCCL support needs +cuda")

    def cmake_args(self):
        spec = self.spec

        def use(name, variant):
            # CAIRN_USE_* are tri-state (ON/OFF/AUTO); a Spack build always decides.
            value = "ON" if spec.satisfies(f"+{variant}") else "OFF"
            return self.define(f"CAIRN_USE_{name}", value)

        args = [
            self.define_from_variant("BUILD_SHARED_LIBS", "shared"),
            use("HDF5", "hdf5"),
            use("CUDA", "cuda"),
            use("NCCL", "nccl"),
            use("FORTRAN", "fortran"),
            use("ZSTD", "zstd"),
            use("ZFP", "zfp"),
            # Off unless asked: otherwise a Doxygen found on the build machine decides.
            self.define_from_variant("CAIRN_BUILD_DOCS", "docs"),
            self.define("CAIRN_BUILD_TESTS", self.run_tests),
            self.define("CAIRN_BUILD_APPS", True),
            # Newer compilers warn about new things; a user's build must not fail on them.
            self.define("CAIRN_WERROR", False),
            # The fault points are for cairn's crash tests, never in an installed library
            # (the tests that need them are then not registered).
            self.define("CAIRN_FAULT_INJECTION", False),
            self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx),
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
        ]
        if spec.satisfies("+fortran"):
            # The Fortran module, its tests and examples use the MPI's Fortran bindings.
            args.append(self.define("MPI_Fortran_COMPILER", spec["mpi"].mpifc))
        if self.run_tests:
            args.append(self.define("MPIEXEC_EXECUTABLE", spec["mpi"].prefix.bin.mpiexec))
        if spec.satisfies("+hdf5"):
            args.append(self.define("HDF5_ROOT", spec["hdf5"].prefix))
            args.append(self.define("HDF5_PREFER_PARALLEL", True))
            # The zstd filter plugin stays inside the prefix, in PLUGIN_DIR, which loading the
            # package puts on HDF5_PLUGIN_PATH (setup_run_environment).
            args.append(self.define("CAIRN_HDF5_PLUGIN_DIR", self.PLUGIN_DIR))
            args.append(self.define("CAIRN_HDF5_PLUGIN_IN_DEFAULT_DIRS", "OFF"))
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CUDA_COMPILER", spec["cuda"].prefix.bin.nvcc))
            cuda_arch = spec.variants["cuda_arch"].value
            if cuda_arch[0] != "none":
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(cuda_arch)))
        if spec.satisfies("+nccl"):
            args.append(self.define("NCCL_INCLUDE_DIR", spec["nccl"].prefix.include))
            args.append(self.define("NCCL_LIBRARY", spec["nccl"].libs[0]))
        if self.run_tests and spec.satisfies("^openmpi"):
            # The 4-rank tests may need more ranks than the build machine has cores; Open MPI
            # refuses that without --oversubscribe (MPICH oversubscribes by default).
            args.append(self.define("CAIRN_MPIEXEC_FLAGS", "--oversubscribe"))
        return args

    def setup_run_environment(self, env):
        """`spack load cairn` (and its module) lets h5py and h5dump read zstd data.h5 files."""
        if self.spec.satisfies("+hdf5") and self.spec.satisfies("+zstd"):
            env.prepend_path("HDF5_PLUGIN_PATH", join_path(self.prefix, self.PLUGIN_DIR))

    def check(self):
        """Runs cairn's test suite (MPI tests at 1, 2 and 4 ranks, the CLI and the demo)."""
        ctest = Executable(join_path(self.spec["cmake"].prefix.bin, "ctest"))
        with working_dir(self.build_directory):
            ctest("--output-on-failure", "-j", str(make_jobs))
