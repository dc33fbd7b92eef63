"""``make native``: rebuild the extension incrementally in build/dev (configured here with
this interpreter) and copy it next to the editable install's package, for the edit-build-test
loop. ``pip install -e .`` (what ``make test`` runs) builds it on its own."""

import glob
import os
import shutil
import subprocess
import sys
import sysconfig

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.path.join(root, "build", "dev")
flags = sys.argv[1:]
if not os.path.isfile(os.path.join(build, "CMakeCache.txt")) or flags:
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", os.path.join(root, "native"), "-B", build, *gen,
                    "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}", *flags],
                   check=True, stdout=subprocess.DEVNULL)
subprocess.run(["cmake", "--build", build], check=True)
ext = glob.glob(os.path.join(build, "_native*" + sysconfig.get_config_var("EXT_SUFFIX")))
if not ext:
    sys.exit(f"no extension built in {build}")
dest = os.path.join(sysconfig.get_paths()["purelib"], "vortex_io")
os.makedirs(dest, exist_ok=True)
shutil.copy2(ext[0], dest)
print(f"installed {os.path.basename(ext[0])} into {dest}")
