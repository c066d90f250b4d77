/* Broken CUDA modules for test_cuda_module.c (built by make_fake_modules.sh):
 *   FAKE_OTHER_BUILD  the entry point answers with another module interface version;
 *   FAKE_NO_ENTRY     no entry point at all (some other library under the module's name);
 *   (neither)         a well-formed entry, linked against a library that is then deleted, so
 *                     loading fails the way a missing libcublas would. */
#include "backend/cuda_device.h"

#ifdef FAKE_NO_ENTRY
int vt_fake_cuda_module_symbol(void);
int vt_fake_cuda_module_symbol(void) { return 1; }
#else
static int no_devices(void) { return 0; }

const vt_cuda_plugin *vt_cuda_plugin_entry(vt_failv_fn failv);
const vt_cuda_plugin *vt_cuda_plugin_entry(vt_failv_fn failv)
{
    (void)failv;
    static vt_cuda_plugin table;
#ifdef FAKE_OTHER_BUILD
    table.version = VT_CUDA_PLUGIN_VERSION + 1;
#else
    table.version = VT_CUDA_PLUGIN_VERSION;
#endif
    table.lib_version = VT_VERSION_NUMBER;
    table.table_size = sizeof table;
    table.ops_size = sizeof(vt_backend_ops);
    table.device_count = no_devices;
    return &table;
}
#endif
