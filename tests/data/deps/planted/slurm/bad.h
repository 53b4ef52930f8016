// A planted violation for the folder_deps_catches test: slurm/ may not see the launcher.
#include "launcher/core/options.h"
