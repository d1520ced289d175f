"""Checks spack/packages/cairn/package.py without Spack: loads the recipe against a stand-in
for the names it takes from `spack.package`, then, for every combination of its variants,
runs cmake_args() and checks that
  - each -D it passes names an option of cairn's CMakeLists.txt (or a CMake/find-module
    variable cairn's build reads), with a value that option accepts;
  - each variant turns its CAIRN_USE_* option ON or OFF, never leaving it to AUTO;
  - +nccl without +cuda is declared a conflict (CMake would fail on it);
  - CAIRN_FAULT_INJECTION and CAIRN_WERROR are OFF (an installed library), and +fortran
    passes the MPI's Fortran compiler (MPI_Fortran_COMPILER);
  - every dependency the CMake build requires is declared;
  - with +hdf5 +zstd the zstd filter plugin is installed only in the prefix, and the run
    environment puts its directory on HDF5_PLUGIN_PATH.

  spack_recipe_check.py SOURCE_DIR
Exits 0 when the recipe agrees with the build, 1 (with the reasons) when it does not.
"""

import itertools
import os
import re
import sys
import types

source_dir = sys.argv[1]
problems = []


# --- A stand-in for spack.package: records what the class body declares.
declared = {"variants": {}, "depends": [], "conflicts": [], "versions": []}


def variant(name, default=None, description="", **kwargs):
    declared["variants"][name] = default


def depends_on(spec, when=None, type=None):
    declared["depends"].append((spec, when))


def conflicts(spec, when=None, msg=None):
    declared["conflicts"].append((spec, when))


def version(name, **kwargs):
    declared["versions"].append(name)


def license(name):
    declared["license"] = name


class Spec:
    """Just what cmake_args() asks of a spec: satisfies(), variants, [dep].prefix etc."""

    def __init__(self, on):
        self.on = on  # the variants that are on
        self.variants = {"cuda_arch": types.SimpleNamespace(value=("80",))}

    def satisfies(self, text):
        m = re.fullmatch(r"([+~])(\w+)", text)
        if m:
            return (m.group(2) in self.on) == (m.group(1) == "+")
        return text == "^openmpi"

    def __getitem__(self, dep):
        prefix = types.SimpleNamespace(
            bin=types.SimpleNamespace(nvcc="/p/bin/nvcc", mpiexec="/p/bin/mpiexec"),
            include="/p/include",
        )
        prefix.__str__ = lambda: "/p"
        return types.SimpleNamespace(prefix=prefix, mpicxx="/p/bin/mpicxx",
                                     mpicc="/p/bin/mpicc", mpifc="/p/bin/mpif90",
                                     libs=["/p/lib/libnccl.so"])


class CMakePackage:
    def define(self, name, value):
        if isinstance(value, bool):
            value = "ON" if value else "OFF"
        return (name, str(value))

    def define_from_variant(self, name, variant_name):
        return self.define(name, variant_name in self.spec.on)


class CudaPackage:
    pass


stub = types.ModuleType("spack.package")
for name, value in dict(variant=variant, depends_on=depends_on, conflicts=conflicts,
                        version=version, license=license, CMakePackage=CMakePackage,
                        CudaPackage=CudaPackage, Executable=None, working_dir=None,
                        join_path=os.path.join, make_jobs=2).items():
    setattr(stub, name, value)
stub.__all__ = [n for n in dir(stub) if not n.startswith("_")]
sys.modules["spack"] = types.ModuleType("spack")
sys.modules["spack.package"] = stub

recipe_path = os.path.join(source_dir, "spack", "packages", "cairn", "package.py")
namespace = {}
exec(compile(open(recipe_path).read(), recipe_path, "exec"), namespace)
Cairn = namespace["Cairn"]
declared["variants"]["cuda"] = False  # from CudaPackage

# --- What the build offers: option() and cairn_option() names of the top CMakeLists.txt.
cmake_text = open(os.path.join(source_dir, "CMakeLists.txt")).read()
options = set(re.findall(r"^\s*(?:option|cairn_option)\((\w+)", cmake_text, re.M))
# Variables of CMake itself and of the find modules cairn's build uses.
known = {"MPI_CXX_COMPILER", "MPI_C_COMPILER", "MPI_Fortran_COMPILER", "MPIEXEC_EXECUTABLE", "HDF5_ROOT",
         "HDF5_PREFER_PARALLEL", "CMAKE_CUDA_COMPILER", "CMAKE_CUDA_ARCHITECTURES",
         "NCCL_INCLUDE_DIR", "NCCL_LIBRARY", "CAIRN_MPIEXEC_FLAGS"}
cache_vars = set(re.findall(r"set\((\w+) [^)]*CACHE", cmake_text))
deps_text = open(os.path.join(source_dir, "lib", "cmake", "CairnDependencies.cmake")).read()
for var in ("NCCL_INCLUDE_DIR", "NCCL_LIBRARY"):
    if var not in deps_text:
        problems.append(f"the recipe sets {var}, which lib/cmake/CairnDependencies.cmake "
                        "does not read")

use_of = {"hdf5": "CAIRN_USE_HDF5", "cuda": "CAIRN_USE_CUDA", "nccl": "CAIRN_USE_NCCL",
          "fortran": "CAIRN_USE_FORTRAN"}
for name in use_of:
    if name not in declared["variants"]:
        problems.append(f"no variant '{name}'")
if ("+nccl", "~cuda") not in declared["conflicts"]:
    problems.append("+nccl without +cuda is not declared a conflict")
dep_names = {re.match(r"[\w-]+", spec).group(0) for spec, _ in declared["depends"]}
for needed in ("mpi", "boost", "xxhash", "spdlog", "fmt", "cli11", "hdf5", "nccl",
               "googletest", "cmake"):
    if needed not in dep_names:
        problems.append(f"no depends_on('{needed}...')")

variant_names = sorted(declared["variants"])
combos = 0
for bits in itertools.product([False, True], repeat=len(variant_names)):
    on = {n for n, b in zip(variant_names, bits) if b}
    if "nccl" in on and "cuda" not in on:
        continue  # the declared conflict
    for run_tests in (False, True):
        pkg = Cairn.__new__(Cairn)
        pkg.spec = Spec(on)
        pkg.run_tests = run_tests
        args = dict(pkg.cmake_args())
        combos += 1
        for name, value in args.items():
            if name.startswith("CAIRN_") or name == "BUILD_SHARED_LIBS":
                if name not in options and name not in cache_vars and name not in known:
                    problems.append(f"{sorted(on)}: -D{name} is not an option of CMakeLists.txt")
            elif name not in known:
                problems.append(f"{sorted(on)}: -D{name} is not a variable cairn's build reads")
        for variant_name, option in use_of.items():
            want = "ON" if variant_name in on else "OFF"
            if args.get(option) != want:
                problems.append(f"{sorted(on)}: {option} is {args.get(option)!r}, not {want}")
        # An installed library: no fault points, and a newer compiler's warnings never fail it.
        for option in ("CAIRN_FAULT_INJECTION", "CAIRN_WERROR"):
            if args.get(option) != "OFF":
                problems.append(f"{sorted(on)}: {option} is {args.get(option)!r}, not 'OFF'")
        if "fortran" in on and not args.get("MPI_Fortran_COMPILER"):
            problems.append(f"{sorted(on)}: +fortran without MPI_Fortran_COMPILER (the MPI's "
                            "Fortran compiler wrapper)")
        # The zstd plugin stays in the prefix, and loading the package puts it on
        # HDF5_PLUGIN_PATH, where h5py and h5dump find it.
        paths = []
        pkg.prefix = "/p/cairn"
        pkg.setup_run_environment(types.SimpleNamespace(
            prepend_path=lambda name, value: paths.append((name, value))))
        if "hdf5" in on and "zstd" in on:
            want = [("HDF5_PLUGIN_PATH", os.path.join("/p/cairn", args.get("CAIRN_HDF5_PLUGIN_DIR", "?")))]
            if args.get("CAIRN_HDF5_PLUGIN_IN_DEFAULT_DIRS") != "OFF" or paths != want:
                problems.append(f"{sorted(on)}: the zstd plugin: CAIRN_HDF5_PLUGIN_DIR "
                                f"{args.get('CAIRN_HDF5_PLUGIN_DIR')!r}, run environment {paths}, "
                                "not OFF outside the prefix and HDF5_PLUGIN_PATH to it")
        elif paths:
            problems.append(f"{sorted(on)}: sets {paths} without the zstd plugin")
        if args.get("CAIRN_BUILD_TESTS") != ("ON" if run_tests else "OFF"):
            problems.append(f"run_tests={run_tests}: CAIRN_BUILD_TESTS is "
                            f"{args.get('CAIRN_BUILD_TESTS')!r}")

if problems:
    print("spack/packages/cairn/package.py disagrees with the build:")
    for p in dict.fromkeys(problems):
        print("  " + p)
    sys.exit(1)
print(f"spack recipe: {len(variant_names)} variants, {combos} variant/test combinations, "
      f"every -D an option or variable of cairn's build")
