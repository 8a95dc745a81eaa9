# Spack recipe of r3. Usage and variants: spack/README.md.
#
# tests/spack/check_package.py (ctest: integration.spack_recipe) reads this file without Spack and
# checks that it parses, that its variants and the options of cmake/R3Options.cmake match one to
# one, that every dependency CMake looks for is here, and that the version bounds are CMake's.
# Keep every option mapping a literal self.define_from_variant("OPTION", "variant") call, so
# that the check can see it.
#
# Written for the Package API v1 layout (repo.yaml + packages/r3/package.py) and Spack >= 0.23
# (the c/cxx language dependencies); Spack 1.x still reads repositories of this layout.

import os
import shutil

from spack.package import *


class R3(CMakePackage, CudaPackage):
    """r3 (Record-Remix-Replay) tunes the GPU kernels of scientific applications
    automatically. It records the launches of selected kernels from one run of the
    application into an HDF5 capture, remixes the kernels (an LLM-driven evolutionary search
    over the source, Bayesian optimisation over compiler flags, LLVM pass pipelines, launch
    shape and source parameters) and replays every candidate against the recorded memory on
    many GPUs at once under MPI (r3-mpi), verifying and timing it."""

    # r3 is not public yet. This is its intended location (the HOMEPAGE_URL of CMakeLists.txt),
    # TO BE CONFIRMED before anyone relies on `spack install r3` fetching it. Until then, build
    # a local checkout with `spack develop` (spack/README.md).
    homepage = "https://github.com/r3-hpc/r3"
    git = "https://github.com/r3-hpc/r3.git"

    version("main", branch="main")

    # Built with CMakePackage's default generator, Unix Makefiles: r3 builds and passes its tests
    # with it as with Ninja (which CI uses).

    # --- variants: each maps to one option of cmake/R3Options.cmake (see cmake_args) ----------
    # cuda (R3_ENABLE_CUDA) and cuda_arch (CMAKE_CUDA_ARCHITECTURES) come from CudaPackage.
    variant(
        "llvm",
        default=True,
        description="Clang/LLVM 19 compile pipeline: the host backend (JIT replay), NVPTX, "
        "the built-in source mutators",
    )
    variant(
        "kokkos",
        default=False,
        description="Kokkos Tools connector and its tests, against an installed Kokkos",
    )
    variant(
        "mpi",
        default=True,
        description="Build r3-mpi against MPI (without it r3-mpi runs as one process)",
    )
    variant(
        "seccomp",
        default=True,
        description="Confine host-backend candidates in the evaluation sandbox with a seccomp "
        "filter (libseccomp)",
    )
    variant(
        "tests",
        default=False,
        description="Build the test suite (GoogleTest, cpp-httplib); "
        "`spack install --test=root` runs it",
    )
    variant("shared", default=True, description="Build r3's libraries as shared libraries")

    # --- dependencies: the versions are the minimums cmake/R3Dependencies.cmake asks for -------
    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.24:", type="build")
    # libseccomp, xxHash and cpp-httplib are found through their pkg-config files.
    depends_on("pkgconfig", type="build")

    # Always required. HDF5 may be serial or parallel: r3 uses its C API from one process.
    depends_on("hdf5@1.10.2:")
    # 0.7 exports a plain `yaml-cpp` target, 0.8 a namespaced one; both are handled.
    depends_on("yaml-cpp@0.7:")
    depends_on("xxhash@0.8:")
    depends_on("cli11@2.1:")
    depends_on("nlohmann-json@3.10:")
    depends_on("eigen@3.3:")
    depends_on("nlopt@2.6:")
    # The LLM client (evolve/) speaks HTTPS through libcurl's multi interface.
    depends_on("curl@7.68:")

    depends_on("mpi", when="+mpi")
    depends_on("libseccomp@2.4:", when="+seccomp")
    # Driver API, NVRTC and CUPTI (extras/CUPTI of Spack's cuda).
    depends_on("cuda@12.4:", when="+cuda")
    # The CUDA recorder decompresses the PTX that nvcc 13 stores zstd-compressed in fat binaries.
    depends_on("zstd", when="+cuda")
    # LLVM 19: its Clang reads the CUDA 12/13 headers of application code (16 cannot; CMake
    # accepts 16 only as a fallback). libr3llvm links LLVM's component archives and Clang's static
    # libraries (lib/libclang*.a), which Spack's llvm installs (it builds with
    # BUILD_SHARED_LIBS=OFF); at run time the in-process Clang uses the resource directory
    # <llvm prefix>/lib/clang/19, hence "run".
    depends_on("llvm@19 +clang", when="+llvm", type=("build", "link", "run"))
    depends_on("kokkos", when="+kokkos")

    # The test suite is configured with R3_BUILD_TESTS=ON, and CMake then requires GoogleTest and
    # cpp-httplib at configure time: they are build dependencies of +tests (a type="test"
    # dependency is only there under `spack install --test`, so +tests alone would not configure).
    with when("+tests"):
        depends_on("googletest@1.10:", type=("build", "link"))
        depends_on("cpp-httplib@0.10:", type="build")
        # tests/core/test_capture_refusal.cpp calls H5Dget_chunk_info (HDF5 1.10.5).
        depends_on("hdf5@1.10.5:")

    # --- conflicts -------------------------------------------------------------------------
    conflicts(
        "platform=darwin",
        msg="r3 runs on Linux only: it places recorded memory with mmap(MAP_FIXED_NOREPLACE), "
        "reads /proc/self and links libr3llvm with GNU ld options",
    )
    conflicts(
        "platform=windows",
        msg="r3 runs on Linux only: it places recorded memory with mmap(MAP_FIXED_NOREPLACE), "
        "reads /proc/self and links libr3llvm with GNU ld options",
    )
    conflicts(
        "%gcc@:9",
        msg="r3 is C++20 (std::span, defaulted operator<=>): it needs GCC 10 or later "
        "(it is built and tested with GCC 12 and 13)",
    )
    # No conflict on cuda_arch=none: this version compiles no CUDA code ahead of time (NVRTC
    # compiles candidates at run time for the GPU present), so cuda_arch is optional.

    def cmake_args(self):
        spec = self.spec
        # The R3_ENABLE_* options are ON/OFF/AUTO in CMake; Spack always decides, so a variant
        # passes ON (the dependency is required: configuring fails without it) or OFF.
        args = [
            self.define_from_variant("R3_ENABLE_CUDA", "cuda"),
            self.define_from_variant("R3_ENABLE_LLVM", "llvm"),
            self.define_from_variant("R3_ENABLE_KOKKOS", "kokkos"),
            self.define_from_variant("R3_ENABLE_SECCOMP", "seccomp"),
            self.define_from_variant("R3_ENABLE_MPI", "mpi"),
            self.define_from_variant("R3_BUILD_TESTS", "tests"),
            self.define_from_variant("BUILD_SHARED_LIBS", "shared"),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("CUDAToolkit_ROOT", spec["cuda"].prefix))
            archs = sorted(a for a in spec.variants["cuda_arch"].value if a != "none")
            if archs:
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", archs))
        if spec.satisfies("+llvm"):
            # Spack's llvm, not a /usr/lib/llvm-19 that CMake's HINTS would also find.
            llvm = spec["llvm"].prefix
            if os.path.isdir(llvm.lib.cmake.llvm):
                args.append(self.define("LLVM_DIR", llvm.lib.cmake.llvm))
            if os.path.isdir(llvm.lib.cmake.clang):
                args.append(self.define("Clang_DIR", llvm.lib.cmake.clang))
        return args

    def check(self):
        """`spack install --test=root r3+tests`: run r3's CTest suite in the build tree. The
        gpu label needs a GPU; the mpi label runs Open MPI's `mpirun --oversubscribe`."""
        if not self.spec.satisfies("+tests"):
            return
        labels = "unit|integration"
        if self.spec.satisfies("^openmpi"):
            labels += "|mpi"
        with working_dir(self.build_directory):
            ctest = Executable(self.spec["cmake"].prefix.bin.ctest)
            ctest("--output-on-failure", "--label-regex", labels)

    # --- stand-alone tests: `spack test run r3` ---------------------------------------------
    # They use share/r3/examples/smoke.h5, a one-launch capture of the demo's stencil2d kernel
    # that the build records and installs (examples/CMakeLists.txt). Each test copies it into
    # its test stage first, so nothing runs in the (possibly read-only) installation prefix.

    def _r3(self):
        return which(self.prefix.bin.r3, required=True)

    def _smoke_capture(self):
        installed = os.path.join(self.prefix.share.r3.examples, "smoke.h5")
        assert os.path.isfile(installed), f"the installation lacks {installed}"
        shutil.copy(installed, "smoke.h5")
        return "smoke.h5"

    def test_version(self):
        """r3 --version names r3 and the features this spec selected"""
        out = self._r3()("--version", output=str, error=str)
        first = out.splitlines()[0] if out else ""
        assert first.startswith("r3 "), f"unexpected first line of r3 --version: {first!r}"
        for feature, variant_name in (
            ("MPI", "mpi"),
            ("CUDA", "cuda"),
            ("LLVM/Clang", "llvm"),
            ("Kokkos", "kokkos"),
        ):
            wanted = "yes" if self.spec.satisfies(f"+{variant_name}") else "no"
            assert f"{feature}: {wanted}" in out, (
                f"r3 --version should say '{feature}: {wanted}' for "
                f"{'+' if wanted == 'yes' else '~'}{variant_name}:\n{out}"
            )
        assert os.path.isfile(self.prefix.bin.join("r3-mpi")), "the installation lacks bin/r3-mpi"

    def test_inspect(self):
        """r3 inspect --verify reads the installed smoke capture and checks its contents"""
        capture = self._smoke_capture()
        out = self._r3()("inspect", "--verify", capture, output=str, error=str)
        assert "stencil2d" in out, f"r3 inspect does not list the kernel stencil2d:\n{out}"

    def test_replay(self):
        """r3 replay replays the installed smoke capture and verifies it (+llvm); without
        LLVM it must say that the host backend is not built (exit status 3)"""
        capture = self._smoke_capture()
        r3 = self._r3()
        if self.spec.satisfies("+llvm"):
            out = r3("replay", capture, output=str, error=str)
            assert "launch(es) verified" in out and "NOT VERIFIED" not in out, (
                f"r3 replay did not verify the smoke capture:\n{out}"
            )
        else:
            out = r3("replay", capture, output=str, error=str, fail_on_error=False)
            assert r3.returncode == 3, (
                f"r3~llvm replay should exit with status 3 (not built), got {r3.returncode}:\n{out}"
            )
