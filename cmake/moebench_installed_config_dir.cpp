// Compiled into every target that links the installed moebench::kernels (the package config
// adds it): tells the library where this installation's shipped config tables are.
extern "C" const char* moebench_installed_config_dir() { return MOEBENCH_INSTALLED_CONFIG_DIR; }
