// common/ may include common/ only.
#include "common/status.h"
