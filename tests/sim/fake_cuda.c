/* A simulated libcuda.so.1 for gpucheck's tests (see README.md beside this file): the driver
 * API calls gpucheck makes (cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet,
 * cuDeviceGetName, cuDeviceGetAttribute, cuDeviceTotalMem_v2, cuGetErrorName), answering from
 * the same scenario file as the simulated libnvidia-ml ($GPUCHECK_SIM_SCENARIO), with the same
 * faults. Like the real library it honours CUDA_VISIBLE_DEVICES (indices, GPU- and MIG- UUID
 * prefixes, stopping at the first entry it cannot resolve).
 *
 * No cuda.h is needed: the few CUresult values and attribute numbers are copied from it below.
 */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;

/* cuda.h, enum cudaError_enum (CUresult) */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_DEVICE 101
/* cuda.h, enum CUdevice_attribute_enum */
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

static const struct {
    CUresult code;
    const char *name, *text;
} ERRORS[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
     "forward compatibility was attempted on non supported HW"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

#define MAX_GPUS 16
#define MAX_MIG 8
#define MAX_FAULTS 64
#define TEXT 128

struct sim_device { /* what CUDA enumerates: a whole GPU, or one MIG device of it */
    int gpu; /* the NVML index, which faults name */
    char name[TEXT], uuid[TEXT];
    unsigned long long memory;
    int cc_major, cc_minor;
};

struct sim_gpu {
    char name[TEXT], uuid[TEXT];
    unsigned long long memory;
    int cc_major, cc_minor, hidden, mig;
    int mig_present[MAX_MIG];
    char mig_name[MAX_MIG][TEXT], mig_uuid[MAX_MIG][TEXT];
    unsigned long long mig_memory[MAX_MIG];
};

struct sim_fault {
    char fn[TEXT];
    int gpu; /* -1: every GPU and the calls about no GPU in particular */
    char action[16];
    long value;
};

static struct {
    int loaded, initialized, cuda, ngpus, ndevices, nfaults;
    struct sim_gpu gpus[MAX_GPUS];
    struct sim_device devices[MAX_GPUS];
    struct sim_fault faults[MAX_FAULTS];
} sim;

/* --- the scenario file (the keys this library needs; the rest is for libnvidia-ml) --------- */

static void copy_text(char *dst, const char *src) {
    snprintf(dst, TEXT, "%s", src);
}

static void parse_line(char *line) {
    char key[TEXT], sub[TEXT], who[TEXT], text[TEXT];
    int index, n = 0;
    line[strcspn(line, "\r\n")] = 0;
    if (sscanf(line, "%127s", key) != 1 || key[0] == '#')
        return;
    if (!strcmp(key, "cuda")) {
        sscanf(line, "cuda %d", &sim.cuda);
    } else if (!strcmp(key, "gpu")) {
        if (sscanf(line, "gpu %d %127s %n", &index, sub, &n) != 2 || index < 0 ||
            index >= MAX_GPUS)
            return;
        struct sim_gpu *g = &sim.gpus[index];
        const char *rest = line + n;
        if (index + 1 > sim.ngpus)
            sim.ngpus = index + 1;
        if (!strcmp(sub, "name")) copy_text(g->name, rest);
        else if (!strcmp(sub, "uuid")) copy_text(g->uuid, rest);
        else if (!strcmp(sub, "memory")) sscanf(rest, "%llu", &g->memory);
        else if (!strcmp(sub, "cc")) sscanf(rest, "%d %d", &g->cc_major, &g->cc_minor);
        else if (!strcmp(sub, "cuda_hidden")) sscanf(rest, "%d", &g->hidden);
        else if (!strcmp(sub, "mig")) sscanf(rest, "%d", &g->mig);
        else if (!strcmp(sub, "mig_device")) {
            int slot, m = 0;
            unsigned long long memory;
            if (sscanf(rest, "%d %llu %127s %n", &slot, &memory, text, &m) == 3 && slot >= 0 &&
                slot < MAX_MIG) {
                g->mig_present[slot] = 1;
                g->mig_memory[slot] = memory;
                copy_text(g->mig_uuid[slot], text);
                copy_text(g->mig_name[slot], rest + m);
            }
        }
    } else if (!strcmp(key, "gpus")) {
        sscanf(line, "gpus %d", &sim.ngpus);
    } else if (!strcmp(key, "fault") && sim.nfaults < MAX_FAULTS) {
        struct sim_fault *f = &sim.faults[sim.nfaults];
        char action[16];
        f->value = 0;
        if (sscanf(line, "fault %127s %127s %15s %ld", f->fn, who, action, &f->value) >= 3) {
            f->gpu = strcmp(who, "*") ? atoi(who) : -1;
            memcpy(f->action, action, sizeof action);
            sim.nfaults++;
        }
    }
}

/* What CUDA can see before CUDA_VISIBLE_DEVICES: every GPU still on the bus; a GPU in MIG
 * mode as its first MIG device (CUDA addresses slices, not the whole GPU). */
static int physical(struct sim_device *out) {
    int n = 0;
    for (int i = 0; i < sim.ngpus; i++) {
        struct sim_gpu *g = &sim.gpus[i];
        struct sim_device d = {i, "", "", g->memory, g->cc_major, g->cc_minor};
        if (g->hidden)
            continue;
        copy_text(d.name, g->name);
        copy_text(d.uuid, g->uuid);
        if (g->mig) {
            int slot = 0;
            while (slot < MAX_MIG && !g->mig_present[slot])
                slot++;
            if (slot == MAX_MIG)
                continue; /* MIG on, no MIG device: nothing for CUDA here */
            copy_text(d.name, g->mig_name[slot]);
            copy_text(d.uuid, g->mig_uuid[slot]);
            d.memory = g->mig_memory[slot];
        }
        out[n++] = d;
    }
    return n;
}

static int find_uuid(const char *token, struct sim_device *found) {
    int hits = 0;
    for (int i = 0; i < sim.ngpus; i++) {
        struct sim_gpu *g = &sim.gpus[i];
        if (g->hidden)
            continue;
        if (!strncmp(token, "GPU-", 4) && !strncmp(g->uuid, token, strlen(token))) {
            struct sim_device d = {i, "", "", g->memory, g->cc_major, g->cc_minor};
            copy_text(d.name, g->name);
            copy_text(d.uuid, g->uuid);
            *found = d;
            hits++;
        }
        for (int s = 0; s < MAX_MIG; s++) {
            if (!g->mig_present[s] || strncmp(token, "MIG-", 4) ||
                strncmp(g->mig_uuid[s], token, strlen(token)))
                continue;
            struct sim_device d = {i, "", "", g->mig_memory[s], g->cc_major, g->cc_minor};
            copy_text(d.name, g->mig_name[s]);
            copy_text(d.uuid, g->mig_uuid[s]);
            *found = d;
            hits++;
        }
    }
    return hits == 1;
}

static void enumerate(void) {
    struct sim_device all[MAX_GPUS];
    int count = physical(all);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char list[1024], *save = NULL;
    if (!visible) {
        memcpy(sim.devices, all, sizeof all);
        sim.ndevices = count;
        return;
    }
    snprintf(list, sizeof list, "%s", visible);
    for (char *tok = strtok_r(list, ",", &save); tok && sim.ndevices < MAX_GPUS;
         tok = strtok_r(NULL, ",", &save)) {
        struct sim_device d;
        char *end;
        while (*tok == ' ')
            tok++;
        long index = strtol(tok, &end, 10);
        if (end != tok && (*end == 0 || *end == ' ')) {
            if (index < 0 || index >= count)
                break;
            d = all[index];
        } else if (!find_uuid(tok, &d)) {
            break;
        }
        sim.devices[sim.ndevices++] = d;
    }
}

static void load(void) {
    const char *path = getenv("GPUCHECK_SIM_SCENARIO");
    char line[512];
    FILE *fh;
    if (sim.loaded)
        return;
    sim.loaded = 1;
    sim.cuda = 13010;
    if (!path || !(fh = fopen(path, "r"))) {
        fprintf(stderr, "fake libcuda: cannot read GPUCHECK_SIM_SCENARIO=%s\n",
                path ? path : "(unset)");
        return;
    }
    while (fgets(line, sizeof line, fh))
        parse_line(line);
    fclose(fh);
    if (sim.ngpus > MAX_GPUS)
        sim.ngpus = MAX_GPUS;
    enumerate();
}

/* --- faults (as in fake_nvml.c) ------------------------------------------------------------ */

static int names_match(const char *fault, const char *fn) {
    size_t n = strlen(fault);
    return !strncmp(fault, fn, n) && (fn[n] == 0 || !strncmp(fn + n, "_v", 2));
}

static CUresult fault_for(const char *fn, int gpu) {
    struct sim_fault *found = NULL;
    load();
    for (int i = 0; i < sim.nfaults; i++) {
        struct sim_fault *f = &sim.faults[i];
        if (!names_match(f->fn, fn) || (f->gpu != -1 && f->gpu != gpu))
            continue;
        if (f->gpu == gpu) {
            found = f;
            break;
        }
        if (!found)
            found = f;
    }
    if (!found)
        return CUDA_SUCCESS;
    if (!strcmp(found->action, "sleep")) {
        sleep((unsigned int)found->value);
    } else if (!strcmp(found->action, "crash")) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        fprintf(stderr, "fake libcuda: simulated crash in %s\n", fn);
        raise(SIGSEGV);
    } else if (!strcmp(found->action, "error")) {
        return (CUresult)found->value;
    }
    return CUDA_SUCCESS;
}

#define DEVICE_CALL(fn, dev)                                              \
    do {                                                                  \
        load();                                                           \
        if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;          \
        if ((dev) < 0 || (dev) >= sim.ndevices) return CUDA_ERROR_INVALID_DEVICE; \
        CUresult rc_ = fault_for(fn, sim.devices[dev].gpu);               \
        if (rc_ != CUDA_SUCCESS) return rc_;                              \
    } while (0)

/* --- the driver API ------------------------------------------------------------------------ */

CUresult cuInit(unsigned int flags) {
    CUresult rc = fault_for("cuInit", -1);
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        sim.initialized = 1;
    return rc;
}

CUresult cuDriverGetVersion(int *version) {
    CUresult rc = fault_for("cuDriverGetVersion", -1);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = sim.cuda;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    CUresult rc = fault_for("cuDeviceGetCount", -1);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!sim.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = sim.ndevices;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    DEVICE_CALL("cuDeviceGet", ordinal);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice dev) {
    DEVICE_CALL("cuDeviceGetName", dev);
    if (!name || length <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)length, "%s", sim.devices[dev].name); /* CUDA truncates, too */
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice dev) {
    DEVICE_CALL("cuDeviceGetAttribute", dev);
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        *value = sim.devices[dev].cc_major;
    else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        *value = sim.devices[dev].cc_minor;
    else
        return CUDA_ERROR_INVALID_VALUE; /* not simulated */
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    DEVICE_CALL("cuDeviceTotalMem_v2", dev);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = (size_t)sim.devices[dev].memory;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == error) {
            *name = ERRORS[i].name;
            return CUDA_SUCCESS;
        }
    *name = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
    if (!text)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == error) {
            *text = ERRORS[i].text;
            return CUDA_SUCCESS;
        }
    *text = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}
