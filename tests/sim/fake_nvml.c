/* A simulated libnvidia-ml.so.1 for gpucheck's tests (see README.md beside this file).
 *
 * Compiled against NVIDIA's own nvml.h, so every type, struct layout and return code is the
 * real one; nvidia-ml-py loads this library by its usual name and runs its real code on it.
 * The machine it describes comes from the scenario file named by $GPUCHECK_SIM_SCENARIO:
 * one table of GPU properties, and faults that make any function return an error, sleep or
 * crash, for every GPU or one. Functions the scenario wants missing (an old driver) are left
 * out at link time with a version script, not here.
 */
#define NVML_NO_UNVERSIONED_FUNC_DEFS /* define nvmlInit and nvmlInit_v2 etc. separately */
#include <nvml.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_GPUS 16
#define MAX_MIG 8
#define MAX_PROCS 16
#define MAX_FAULTS 64
#define MAX_STEPS 256
#define MAX_COUNTERS 128
#define TEXT 128

struct sim_mig {
    int present;
    char name[TEXT], uuid[TEXT];
    unsigned long long memory;
};

struct sim_proc {
    unsigned int pid;
    unsigned long long used;
    int graphics; /* 0: a compute context, 1: a graphics one */
    unsigned int gi, ci; /* MIG GPU and compute instance; 0xFFFFFFFF: none */
    char name[TEXT];
};

struct sim_gpu {
    char name[TEXT], uuid[TEXT], serial[TEXT];
    char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    unsigned int pci_device_id, pci_subsystem_id; /* 0x233010DE: device << 16 | vendor */
    unsigned int brand, arch;
    unsigned long long mem_total, mem_used, mem_reserved;
    int cc_major, cc_minor;
    unsigned int util_gpu, util_mem;
    unsigned int temp, temp_slowdown, temp_shutdown;
    unsigned int power_mw, power_limit_mw, fan;
    unsigned long long clock_reasons;
    unsigned int pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
    unsigned int ecc, ecc_pending;
    unsigned long long ecc_volatile, ecc_aggregate;
    unsigned int retired_sbe, retired_dbe, retired_pending;
    unsigned int remap_corr, remap_unc, remap_pending, remap_failed;
    unsigned int persistence, display_active, compute_mode;
    unsigned int mig, mig_pending, mig_max;
    unsigned int clock_sm, clock_mem, pstate;
    int lost; /* fallen off the bus: every call about it answers GPU_IS_LOST */
    int has_fabric; /* "fabric" line given: an NVSwitch-attached GPU (else NOT_SUPPORTED) */
    unsigned int fabric_state, fabric_status;
    unsigned int nvlinks, nvlink_active; /* link count, active links as bits */
    struct sim_mig migs[MAX_MIG];
    int nprocs;
    struct sim_proc procs[MAX_PROCS];
};

/* A timeline entry: from the `step`th sample of a GPU on, one of its lines applies on top of
 * the scenario's. A GPU's sample count is how many times the function being called has been
 * called for it (a watch calls each function once per sample). */
struct sim_step {
    int step, gpu;
    char key[TEXT], rest[2 * TEXT];
};

struct sim_counter {
    char fn[TEXT];
    int gpu, calls;
};

struct sim_fault {
    char fn[TEXT];
    int gpu; /* -1: every GPU and the system-wide calls */
    char action[16]; /* error | sleep | crash */
    long value;
};

/* nvml.h leaves the device struct opaque: a handle here points at one of these. */
struct nvmlDevice_st {
    struct sim_gpu *gpu;
    struct sim_mig *mig; /* NULL for a whole GPU */
    int index;
};

static struct {
    int loaded, initialized;
    int live; /* "live_processes 1": a process that no longer runs frees its memory */
    char driver[TEXT], nvml_version[TEXT];
    int cuda;
    int ngpus;
    struct sim_gpu gpus[MAX_GPUS];
    struct nvmlDevice_st handles[MAX_GPUS];
    struct nvmlDevice_st mig_handles[MAX_GPUS][MAX_MIG];
    int nfaults;
    struct sim_fault faults[MAX_FAULTS];
    struct sim_gpu base[MAX_GPUS]; /* the scenario before any timeline step */
    int nsteps, ncounters;
    struct sim_step steps[MAX_STEPS];
    struct sim_counter counters[MAX_COUNTERS];
    /* "p2p a b read write nvlink" (nvmlGpuP2PStatus_t) and "topo a b level": +1, 0: no line */
    int p2p[MAX_GPUS][MAX_GPUS][3];
    int topo[MAX_GPUS][MAX_GPUS];
} sim;

/* --- the scenario file --------------------------------------------------------------------- */

static void copy_text(char *dst, const char *src) {
    snprintf(dst, TEXT, "%s", src);
}

static void apply_gpu(struct sim_gpu *g, const char *key, const char *rest) {
    if (!strcmp(key, "name")) copy_text(g->name, rest);
    else if (!strcmp(key, "uuid")) copy_text(g->uuid, rest);
    else if (!strcmp(key, "serial")) copy_text(g->serial, rest);
    else if (!strcmp(key, "pci"))
        sscanf(rest, "%31s %x %x", g->bus_id, &g->pci_device_id, &g->pci_subsystem_id);
    else if (!strcmp(key, "brand")) sscanf(rest, "%u", &g->brand);
    else if (!strcmp(key, "arch")) sscanf(rest, "%u", &g->arch);
    else if (!strcmp(key, "memory"))
        sscanf(rest, "%llu %llu %llu", &g->mem_total, &g->mem_used, &g->mem_reserved);
    else if (!strcmp(key, "cc")) sscanf(rest, "%d %d", &g->cc_major, &g->cc_minor);
    else if (!strcmp(key, "util")) sscanf(rest, "%u %u", &g->util_gpu, &g->util_mem);
    else if (!strcmp(key, "temp"))
        sscanf(rest, "%u %u %u", &g->temp, &g->temp_slowdown, &g->temp_shutdown);
    else if (!strcmp(key, "power")) sscanf(rest, "%u %u", &g->power_mw, &g->power_limit_mw);
    else if (!strcmp(key, "fan")) sscanf(rest, "%u", &g->fan);
    else if (!strcmp(key, "clocks_event")) sscanf(rest, "%llx", &g->clock_reasons);
    else if (!strcmp(key, "pcie"))
        sscanf(rest, "%u %u %u %u", &g->pcie_gen, &g->pcie_gen_max, &g->pcie_width,
               &g->pcie_width_max);
    else if (!strcmp(key, "ecc")) sscanf(rest, "%u %u", &g->ecc, &g->ecc_pending);
    else if (!strcmp(key, "ecc_errors"))
        sscanf(rest, "%llu %llu", &g->ecc_volatile, &g->ecc_aggregate);
    else if (!strcmp(key, "retired"))
        sscanf(rest, "%u %u %u", &g->retired_sbe, &g->retired_dbe, &g->retired_pending);
    else if (!strcmp(key, "remap"))
        sscanf(rest, "%u %u %u %u", &g->remap_corr, &g->remap_unc, &g->remap_pending,
               &g->remap_failed);
    else if (!strcmp(key, "persistence")) sscanf(rest, "%u", &g->persistence);
    else if (!strcmp(key, "display")) sscanf(rest, "%u", &g->display_active);
    else if (!strcmp(key, "compute_mode")) sscanf(rest, "%u", &g->compute_mode);
    else if (!strcmp(key, "mig"))
        sscanf(rest, "%u %u %u", &g->mig, &g->mig_pending, &g->mig_max);
    else if (!strcmp(key, "mig_device")) {
        int slot, n = 0;
        unsigned long long memory;
        char uuid[TEXT];
        if (sscanf(rest, "%d %llu %127s %n", &slot, &memory, uuid, &n) == 3 && slot >= 0 &&
            slot < MAX_MIG) {
            struct sim_mig *m = &g->migs[slot];
            m->present = 1;
            m->memory = memory;
            copy_text(m->uuid, uuid);
            copy_text(m->name, rest + n);
        }
    } else if (!strcmp(key, "process") && g->nprocs < MAX_PROCS) {
        struct sim_proc *p = &g->procs[g->nprocs];
        int n = 0;
        if (sscanf(rest, "%u %llu %n", &p->pid, &p->used, &n) == 2) {
            copy_text(p->name, rest + n);
            p->graphics = 0;
            p->gi = p->ci = 0xFFFFFFFFu;
            g->nprocs++;
        }
    } else if (!strcmp(key, "process_ex") && g->nprocs < MAX_PROCS) {
        /* process_ex <compute|graphics> <gi> <ci> <pid> <used> <name>; -1: no MIG instance */
        struct sim_proc *p = &g->procs[g->nprocs];
        char kind[16];
        int gi, ci, n = 0;
        if (sscanf(rest, "%15s %d %d %u %llu %n", kind, &gi, &ci, &p->pid, &p->used, &n) == 5) {
            copy_text(p->name, rest + n);
            p->graphics = !strcmp(kind, "graphics");
            p->gi = gi < 0 ? 0xFFFFFFFFu : (unsigned int)gi;
            p->ci = ci < 0 ? 0xFFFFFFFFu : (unsigned int)ci;
            g->nprocs++;
        }
    } else if (!strcmp(key, "noprocess")) g->nprocs = 0;
    else if (!strcmp(key, "clocks")) sscanf(rest, "%u %u", &g->clock_sm, &g->clock_mem);
    else if (!strcmp(key, "pstate")) sscanf(rest, "%u", &g->pstate);
    else if (!strcmp(key, "lost")) sscanf(rest, "%d", &g->lost);
    else if (!strcmp(key, "fabric"))
        g->has_fabric = sscanf(rest, "%u %u", &g->fabric_state, &g->fabric_status) == 2;
    else if (!strcmp(key, "nvlinks")) sscanf(rest, "%u %x", &g->nvlinks, &g->nvlink_active);
    /* Unknown keys are ignored (the CUDA library reads some of its own). */
}

static void parse_gpu(int index, const char *key, const char *rest) {
    if (index + 1 > sim.ngpus)
        sim.ngpus = index + 1;
    apply_gpu(&sim.gpus[index], key, rest);
}

static void parse_line(char *line) {
    char key[TEXT], sub[TEXT], who[TEXT], action[16];
    int index, n = 0;
    line[strcspn(line, "\r\n")] = 0;
    if (sscanf(line, "%127s", key) != 1 || key[0] == '#')
        return;
    if (!strcmp(key, "driver")) sscanf(line, "driver %127s", sim.driver);
    else if (!strcmp(key, "nvml")) sscanf(line, "nvml %127s", sim.nvml_version);
    else if (!strcmp(key, "cuda")) sscanf(line, "cuda %d", &sim.cuda);
    else if (!strcmp(key, "gpus")) sscanf(line, "gpus %d", &sim.ngpus);
    else if (!strcmp(key, "live_processes")) sscanf(line, "live_processes %d", &sim.live);
    else if (!strcmp(key, "gpu")) {
        if (sscanf(line, "gpu %d %127s %n", &index, sub, &n) == 2 && index >= 0 &&
            index < MAX_GPUS)
            parse_gpu(index, sub, line + n);
    } else if (!strcmp(key, "step") && sim.nsteps < MAX_STEPS) {
        /* step <sample> gpu <index> <key> <values...> */
        struct sim_step *st = &sim.steps[sim.nsteps];
        if (sscanf(line, "step %d gpu %d %127s %n", &st->step, &st->gpu, st->key, &n) == 3 &&
            st->gpu >= 0 && st->gpu < MAX_GPUS) {
            snprintf(st->rest, sizeof st->rest, "%s", line + n);
            sim.nsteps++;
        }
    } else if (!strcmp(key, "p2p")) {
        int a, b, st[3];
        if (sscanf(line, "p2p %d %d %d %d %d", &a, &b, &st[0], &st[1], &st[2]) == 5 && a >= 0 &&
            b >= 0 && a < MAX_GPUS && b < MAX_GPUS)
            for (int k = 0; k < 3; k++)
                sim.p2p[a][b][k] = sim.p2p[b][a][k] = st[k] + 1;
    } else if (!strcmp(key, "topo")) {
        int a, b, level;
        if (sscanf(line, "topo %d %d %d", &a, &b, &level) == 3 && a >= 0 && b >= 0 &&
            a < MAX_GPUS && b < MAX_GPUS)
            sim.topo[a][b] = sim.topo[b][a] = level + 1;
    } else if (!strcmp(key, "fault") && sim.nfaults < MAX_FAULTS) {
        struct sim_fault *f = &sim.faults[sim.nfaults];
        f->value = 0;
        if (sscanf(line, "fault %127s %127s %15s %ld", f->fn, who, action, &f->value) >= 3) {
            f->gpu = strcmp(who, "*") ? atoi(who) : -1;
            copy_text(f->action, action);
            f->action[15] = 0;
            sim.nfaults++;
        }
    }
    /* "missing" lines are for the linker; anything else is ignored. */
}

static void load(void) {
    const char *path = getenv("GPUCHECK_SIM_SCENARIO");
    char line[512];
    FILE *fh;
    if (sim.loaded)
        return;
    sim.loaded = 1;
    copy_text(sim.driver, "590.48.01");
    sim.cuda = 13010;
    if (!path || !(fh = fopen(path, "r"))) {
        fprintf(stderr, "fake libnvidia-ml: cannot read GPUCHECK_SIM_SCENARIO=%s\n",
                path ? path : "(unset)");
        return;
    }
    while (fgets(line, sizeof line, fh))
        parse_line(line);
    fclose(fh);
    if (sim.ngpus > MAX_GPUS)
        sim.ngpus = MAX_GPUS;
    if (!sim.nvml_version[0])
        snprintf(sim.nvml_version, TEXT, "%d.%.100s", sim.cuda / 1000, sim.driver);
    memcpy(sim.base, sim.gpus, sizeof sim.base);
    for (int i = 0; i < MAX_GPUS; i++) {
        sim.handles[i] = (struct nvmlDevice_st){&sim.gpus[i], NULL, i};
        for (int j = 0; j < MAX_MIG; j++)
            sim.mig_handles[i][j] = (struct nvmlDevice_st){&sim.gpus[i], &sim.gpus[i].migs[j], i};
    }
}

/* --- the timeline ------------------------------------------------------------------------------ */

/* Sets GPU `gpu` to its state at the sample this call belongs to: the number of earlier calls
 * of `fn` for it, counted only when `count` (a sizing call and its buffer call are one). */
static void at_sample(const char *fn, int gpu, int count) {
    struct sim_counter *c = NULL;
    int sample;
    if (!sim.nsteps || gpu < 0 || gpu >= MAX_GPUS)
        return;
    for (int i = 0; i < sim.ncounters; i++)
        if (sim.counters[i].gpu == gpu && !strcmp(sim.counters[i].fn, fn))
            c = &sim.counters[i];
    if (!c && sim.ncounters < MAX_COUNTERS) {
        c = &sim.counters[sim.ncounters++];
        copy_text(c->fn, fn);
        c->gpu = gpu;
        c->calls = 0;
    }
    if (!c)
        return;
    sample = count ? c->calls++ : (c->calls > 0 ? c->calls - 1 : 0);
    sim.gpus[gpu] = sim.base[gpu];
    for (int i = 0; i < sim.nsteps; i++)
        if (sim.steps[i].gpu == gpu && sim.steps[i].step <= sample)
            apply_gpu(&sim.gpus[gpu], sim.steps[i].key, sim.steps[i].rest);
}

/* As the driver does when a process ends: its contexts go, and their memory with them. A
 * zombie has ended too (its address space is gone). */
static int running(unsigned int pid) {
    char path[64], buf[512];
    char *paren;
    FILE *fh;
    size_t n;
    if (kill((pid_t)pid, 0) == -1 && errno == ESRCH)
        return 0;
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    if (!(fh = fopen(path, "r")))
        return 1;
    n = fread(buf, 1, sizeof buf - 1, fh);
    fclose(fh);
    buf[n] = 0;
    paren = strrchr(buf, ')');
    return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

static void drop_ended(struct sim_gpu *g) {
    int k = 0;
    if (!sim.live)
        return;
    for (int i = 0; i < g->nprocs; i++) {
        if (running(g->procs[i].pid))
            g->procs[k++] = g->procs[i];
        else
            g->mem_used = g->mem_used > g->procs[i].used ? g->mem_used - g->procs[i].used : 0;
    }
    g->nprocs = k;
}

/* --- faults -------------------------------------------------------------------------------- */

/* A fault named "nvmlDeviceGetCount" also covers nvmlDeviceGetCount_v2, and "nvmlInit" every
 * nvmlInit variant: faults are named as the binding's Python functions are. */
static int names_match(const char *fault, const char *fn) {
    size_t n = strlen(fault);
    if (strncmp(fault, fn, n))
        return 0;
    return fn[n] == 0 || !strncmp(fn + n, "_v", 2) || !strcmp(fn + n, "WithFlags");
}

/* The scenario's fault for this call, applied: sleeps, crashes, or returns the error code
 * to return (NVML_SUCCESS: go on). A fault for one GPU wins over one for every GPU. */
static nvmlReturn_t fault_for(const char *fn, int gpu) {
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
        return NVML_SUCCESS;
    if (!strcmp(found->action, "sleep")) {
        sleep((unsigned int)found->value);
        return NVML_SUCCESS;
    }
    if (!strcmp(found->action, "crash")) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none); /* no core file left behind */
        fprintf(stderr, "fake libnvidia-ml: simulated crash in %s\n", fn);
        raise(SIGSEGV);
    }
    if (!strcmp(found->action, "error"))
        return (nvmlReturn_t)found->value;
    return NVML_SUCCESS;
}

static nvmlReturn_t put_text(char *dst, unsigned int length, const char *src) {
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    snprintf(dst, length, "%s", src);
    return NVML_SUCCESS;
}

static int valid(nvmlDevice_t d) {
    if (!d)
        return 0;
    for (int i = 0; i < sim.ngpus; i++) {
        if (d == &sim.handles[i])
            return 1;
        for (int j = 0; j < MAX_MIG; j++)
            if (d == &sim.mig_handles[i][j])
                return 1;
    }
    return 0;
}

/* The start of every function: the scenario's fault for it, then the usual NVML checks. */
#define SYSTEM_CALL(fn)                                        \
    do {                                                       \
        nvmlReturn_t rc_ = fault_for(fn, -1);                  \
        if (rc_ != NVML_SUCCESS) return rc_;                   \
        if (!sim.initialized) return NVML_ERROR_UNINITIALIZED; \
    } while (0)

#define DEVICE_CALL_COUNTED(fn, dev, out, count)                      \
    do {                                                              \
        if (!sim.initialized) return NVML_ERROR_UNINITIALIZED;        \
        if (!valid(dev) || !(out)) return NVML_ERROR_INVALID_ARGUMENT; \
        nvmlReturn_t rc_ = fault_for(fn, (dev)->index);               \
        if (rc_ != NVML_SUCCESS) return rc_;                          \
        at_sample(fn, (dev)->index, count);                           \
        drop_ended((dev)->gpu);                                       \
        if ((dev)->gpu->lost) return NVML_ERROR_GPU_IS_LOST;          \
    } while (0)

#define DEVICE_CALL(fn, dev, out) DEVICE_CALL_COUNTED(fn, dev, out, 1)

/* For the functions that have no meaning on a MIG device handle. */
#define WHOLE_GPU(dev)                                 \
    do {                                               \
        if ((dev)->mig) return NVML_ERROR_NOT_SUPPORTED; \
    } while (0)

/* --- init and system ------------------------------------------------------------------------- */

static nvmlReturn_t init(const char *fn) {
    nvmlReturn_t rc = fault_for(fn, -1);
    if (rc == NVML_SUCCESS)
        sim.initialized++;
    return rc;
}

nvmlReturn_t nvmlInit(void) { return init("nvmlInit"); }
nvmlReturn_t nvmlInit_v2(void) { return init("nvmlInit_v2"); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    return init("nvmlInitWithFlags");
}

nvmlReturn_t nvmlShutdown(void) {
    SYSTEM_CALL("nvmlShutdown");
    sim.initialized--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_GPU_NOT_FOUND: return "No GPUs were found";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    SYSTEM_CALL("nvmlSystemGetDriverVersion");
    return put_text(version, length, sim.driver);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    SYSTEM_CALL("nvmlSystemGetNVMLVersion");
    return put_text(version, length, sim.nvml_version);
}

static nvmlReturn_t cuda_version(const char *fn, int *out) {
    SYSTEM_CALL(fn);
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    *out = sim.cuda;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    return cuda_version("nvmlSystemGetCudaDriverVersion", v);
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
    return cuda_version("nvmlSystemGetCudaDriverVersion_v2", v);
}

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length) {
    SYSTEM_CALL("nvmlSystemGetProcessName");
    for (int i = 0; i < sim.ngpus; i++)
        for (int j = 0; j < sim.gpus[i].nprocs; j++)
            if (sim.gpus[i].procs[j].pid == pid)
                return put_text(name, length, sim.gpus[i].procs[j].name);
    return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t device_count(const char *fn, unsigned int *count) {
    SYSTEM_CALL(fn);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned int)sim.ngpus;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *c) { return device_count("nvmlDeviceGetCount", c); }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *c) {
    return device_count("nvmlDeviceGetCount_v2", c);
}

static nvmlReturn_t handle_by_index(const char *fn, unsigned int index, nvmlDevice_t *device) {
    if (!sim.initialized)
        return NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t rc = fault_for(fn, (int)index);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!device || index >= (unsigned int)sim.ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    at_sample(fn, (int)index, 1);
    if (sim.gpus[index].lost)
        return NVML_ERROR_GPU_IS_LOST;
    *device = &sim.handles[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) {
    return handle_by_index("nvmlDeviceGetHandleByIndex", i, d);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    return handle_by_index("nvmlDeviceGetHandleByIndex_v2", i, d);
}

/* --- identity -------------------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
    DEVICE_CALL("nvmlDeviceGetName", d, name);
    return put_text(name, length, d->mig ? d->mig->name : d->gpu->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
    DEVICE_CALL("nvmlDeviceGetUUID", d, uuid);
    return put_text(uuid, length, d->mig ? d->mig->uuid : d->gpu->uuid);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *serial, unsigned int length) {
    DEVICE_CALL("nvmlDeviceGetSerial", d, serial);
    return put_text(serial, length, d->gpu->serial);
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t d, nvmlBrandType_t *type) {
    DEVICE_CALL("nvmlDeviceGetBrand", d, type);
    *type = (nvmlBrandType_t)d->gpu->brand;
    return NVML_SUCCESS;
}

static nvmlReturn_t pci_info(const char *fn, nvmlDevice_t d, nvmlPciInfo_t *pci) {
    DEVICE_CALL(fn, d, pci);
    WHOLE_GPU(d);
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%s", d->gpu->bus_id);
    sscanf(d->gpu->bus_id, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
             pci->domain & 0xffff, pci->bus, pci->device);
    pci->pciDeviceId = d->gpu->pci_device_id;
    pci->pciSubSystemId = d->gpu->pci_subsystem_id;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *p) {
    return pci_info("nvmlDeviceGetPciInfo", d, p);
}
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *p) {
    return pci_info("nvmlDeviceGetPciInfo_v2", d, p);
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
    return pci_info("nvmlDeviceGetPciInfo_v3", d, p);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor) {
    DEVICE_CALL("nvmlDeviceGetMinorNumber", d, minor);
    WHOLE_GPU(d);
    *minor = (unsigned int)d->index; /* /dev/nvidiaN as the scenario's fake /dev names them */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, nvmlDeviceArchitecture_t *arch) {
    DEVICE_CALL("nvmlDeviceGetArchitecture", d, arch);
    *arch = d->gpu->arch;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor) {
    DEVICE_CALL("nvmlDeviceGetCudaComputeCapability", d, major);
    if (!minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *major = d->gpu->cc_major;
    *minor = d->gpu->cc_minor;
    return NVML_SUCCESS;
}

/* --- memory and load ------------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *memory) {
    DEVICE_CALL("nvmlDeviceGetMemoryInfo", d, memory);
    if (d->mig) {
        memory->total = d->mig->memory;
        memory->used = 0;
    } else {
        memory->total = d->gpu->mem_total;
        memory->used = d->gpu->mem_used; /* v1: used includes what the driver reserves */
    }
    memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *memory) {
    nvmlMemory_t v1;
    nvmlReturn_t rc;
    DEVICE_CALL("nvmlDeviceGetMemoryInfo_v2", d, memory);
    if ((rc = nvmlDeviceGetMemoryInfo(d, &v1)) != NVML_SUCCESS)
        return rc;
    memory->total = v1.total;
    memory->free = v1.free;
    memory->reserved = d->mig ? 0 : d->gpu->mem_reserved;
    memory->used = v1.used > memory->reserved ? v1.used - memory->reserved : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    DEVICE_CALL("nvmlDeviceGetUtilizationRates", d, u);
    WHOLE_GPU(d);
    u->gpu = d->gpu->util_gpu;
    u->memory = d->gpu->util_mem;
    return NVML_SUCCESS;
}

/* --- temperature, power, clocks -------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, nvmlTemperatureSensors_t s, unsigned int *t) {
    DEVICE_CALL("nvmlDeviceGetTemperature", d, t);
    WHOLE_GPU(d);
    if (s != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    *t = d->gpu->temp;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t d, nvmlTemperatureThresholds_t type,
                                               unsigned int *t) {
    DEVICE_CALL("nvmlDeviceGetTemperatureThreshold", d, t);
    WHOLE_GPU(d);
    if (type == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
        *t = d->gpu->temp_slowdown;
    else if (type == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)
        *t = d->gpu->temp_shutdown;
    else
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    DEVICE_CALL("nvmlDeviceGetPowerUsage", d, mw);
    WHOLE_GPU(d);
    *mw = d->gpu->power_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) {
    DEVICE_CALL("nvmlDeviceGetEnforcedPowerLimit", d, mw);
    WHOLE_GPU(d);
    *mw = d->gpu->power_limit_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *percent) {
    DEVICE_CALL("nvmlDeviceGetFanSpeed", d, percent);
    WHOLE_GPU(d);
    *percent = d->gpu->fan;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r) {
    DEVICE_CALL("nvmlDeviceGetCurrentClocksEventReasons", d, r);
    WHOLE_GPU(d);
    *r = d->gpu->clock_reasons;
    return NVML_SUCCESS;
}

/* The name before R535; same bits. */
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r) {
    DEVICE_CALL("nvmlDeviceGetCurrentClocksThrottleReasons", d, r);
    WHOLE_GPU(d);
    *r = d->gpu->clock_reasons;
    return NVML_SUCCESS;
}

/* --- PCIe ------------------------------------------------------------------------------------ */

#define PCIE_GETTER(fn, field)                                   \
    nvmlReturn_t fn(nvmlDevice_t d, unsigned int *value) {       \
        DEVICE_CALL(#fn, d, value);                              \
        WHOLE_GPU(d);                                            \
        *value = d->gpu->field;                                  \
        return NVML_SUCCESS;                                     \
    }

PCIE_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, pcie_gen)
PCIE_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, pcie_gen_max)
PCIE_GETTER(nvmlDeviceGetCurrPcieLinkWidth, pcie_width)
PCIE_GETTER(nvmlDeviceGetMaxPcieLinkWidth, pcie_width_max)

/* --- ECC and memory repair ------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, nvmlEnableState_t *current,
                                  nvmlEnableState_t *pending) {
    DEVICE_CALL("nvmlDeviceGetEccMode", d, current);
    if (!pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    *current = d->gpu->ecc ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    *pending = d->gpu->ecc_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, nvmlMemoryErrorType_t type,
                                         nvmlEccCounterType_t counter, unsigned long long *count) {
    DEVICE_CALL("nvmlDeviceGetTotalEccErrors", d, count);
    WHOLE_GPU(d);
    if (!d->gpu->ecc)
        return NVML_ERROR_NOT_SUPPORTED;
    if (type == NVML_MEMORY_ERROR_TYPE_CORRECTED)
        *count = 0;
    else
        *count = counter == NVML_VOLATILE_ECC ? d->gpu->ecc_volatile : d->gpu->ecc_aggregate;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, nvmlPageRetirementCause_t cause,
                                       unsigned int *count, unsigned long long *addresses) {
    unsigned int have;
    DEVICE_CALL("nvmlDeviceGetRetiredPages", d, count);
    WHOLE_GPU(d);
    have = cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? d->gpu->retired_dbe
                                                                     : d->gpu->retired_sbe;
    if (!addresses || *count < have) {
        *count = have;
        return have ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    }
    for (unsigned int i = 0; i < have; i++)
        addresses[i] = 0x1000ULL * (i + 1) + (cause << 20);
    *count = have;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, nvmlEnableState_t *pending) {
    DEVICE_CALL("nvmlDeviceGetRetiredPagesPendingStatus", d, pending);
    WHOLE_GPU(d);
    *pending = d->gpu->retired_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
                                       unsigned int *pending, unsigned int *failed) {
    DEVICE_CALL("nvmlDeviceGetRemappedRows", d, corr);
    WHOLE_GPU(d);
    if (!unc || !pending || !failed)
        return NVML_ERROR_INVALID_ARGUMENT;
    *corr = d->gpu->remap_corr;
    *unc = d->gpu->remap_unc;
    *pending = d->gpu->remap_pending;
    *failed = d->gpu->remap_failed;
    return NVML_SUCCESS;
}

/* --- modes ----------------------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *mode) {
    DEVICE_CALL("nvmlDeviceGetPersistenceMode", d, mode);
    *mode = d->gpu->persistence ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t d, nvmlEnableState_t *active) {
    DEVICE_CALL("nvmlDeviceGetDisplayActive", d, active);
    *active = d->gpu->display_active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, nvmlComputeMode_t *mode) {
    DEVICE_CALL("nvmlDeviceGetComputeMode", d, mode);
    *mode = (nvmlComputeMode_t)d->gpu->compute_mode;
    return NVML_SUCCESS;
}

/* --- MIG ------------------------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    DEVICE_CALL("nvmlDeviceGetMigMode", d, current);
    WHOLE_GPU(d);
    if (!pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    *current = d->gpu->mig;
    *pending = d->gpu->mig_pending;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count) {
    DEVICE_CALL("nvmlDeviceGetMaxMigDeviceCount", d, count);
    WHOLE_GPU(d);
    *count = d->gpu->mig_max > MAX_MIG ? MAX_MIG : d->gpu->mig_max;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index,
                                                 nvmlDevice_t *mig) {
    DEVICE_CALL("nvmlDeviceGetMigDeviceHandleByIndex", d, mig);
    WHOLE_GPU(d);
    if (!d->gpu->mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= MAX_MIG || !d->gpu->migs[index].present)
        return NVML_ERROR_NOT_FOUND;
    *mig = &sim.mig_handles[d->index][index];
    return NVML_SUCCESS;
}

/* --- processes ------------------------------------------------------------------------------- */

/* The three generations of the call differ only in the struct they fill. */
/* The three generations of the call differ only in the struct they fill; compute and graphics
 * in which contexts they list. The binding's sizing call (no buffer) starts a sample. */
#define PROCESS_GETTER(fn, type, want_graphics, extra)                                      \
    nvmlReturn_t fn(nvmlDevice_t d, unsigned int *count, type *infos) {                     \
        int n = 0, k = 0;                                                                   \
        DEVICE_CALL_COUNTED(#fn, d, count, !infos);                                         \
        WHOLE_GPU(d);                                                                       \
        for (int i = 0; i < d->gpu->nprocs; i++)                                            \
            n += d->gpu->procs[i].graphics == (want_graphics);                              \
        if (!infos || *count < (unsigned int)n) {                                           \
            *count = (unsigned int)n;                                                       \
            return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;                         \
        }                                                                                   \
        for (int i = 0; i < d->gpu->nprocs; i++) {                                          \
            struct sim_proc *p = &d->gpu->procs[i];                                         \
            if (p->graphics != (want_graphics))                                             \
                continue;                                                                   \
            memset(&infos[k], 0, sizeof infos[k]);                                          \
            infos[k].pid = p->pid;                                                          \
            infos[k].usedGpuMemory = p->used;                                               \
            extra                                                                           \
            k++;                                                                            \
        }                                                                                   \
        *count = (unsigned int)n;                                                           \
        return NVML_SUCCESS;                                                                \
    }

#define MIG_IDS                            \
    infos[k].gpuInstanceId = p->gi;        \
    infos[k].computeInstanceId = p->ci;

PROCESS_GETTER(nvmlDeviceGetComputeRunningProcesses, nvmlProcessInfo_v1_t, 0, )
PROCESS_GETTER(nvmlDeviceGetComputeRunningProcesses_v2, nvmlProcessInfo_v2_t, 0, MIG_IDS)
PROCESS_GETTER(nvmlDeviceGetComputeRunningProcesses_v3, nvmlProcessInfo_t, 0, MIG_IDS)
PROCESS_GETTER(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t, 1, )
PROCESS_GETTER(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_v2_t, 1, MIG_IDS)
PROCESS_GETTER(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t, 1, MIG_IDS)

/* --- clocks and performance state (what `gpucheck watch` samples) ---------------------------- */

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, nvmlClockType_t type, unsigned int *mhz) {
    nvmlReturn_t rc;
    if (!sim.initialized) return NVML_ERROR_UNINITIALIZED;
    if (!valid(d) || !mhz) return NVML_ERROR_INVALID_ARGUMENT;
    if ((rc = fault_for("nvmlDeviceGetClockInfo", d->index)) != NVML_SUCCESS) return rc;
    /* Called once per clock type in a sample: each type counts its own samples. */
    at_sample(type == NVML_CLOCK_MEM ? "nvmlDeviceGetClockInfo/mem" : "nvmlDeviceGetClockInfo",
              d->index, 1);
    if (d->gpu->lost) return NVML_ERROR_GPU_IS_LOST;
    WHOLE_GPU(d);
    if (type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS)
        *mhz = d->gpu->clock_sm;
    else if (type == NVML_CLOCK_MEM)
        *mhz = d->gpu->clock_mem;
    else
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, nvmlPstates_t *state) {
    DEVICE_CALL("nvmlDeviceGetPerformanceState", d, state);
    WHOLE_GPU(d);
    *state = (nvmlPstates_t)d->gpu->pstate;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw) {
    DEVICE_CALL("nvmlDeviceGetPowerManagementLimit", d, mw);
    WHOLE_GPU(d);
    *mw = d->gpu->power_limit_mw;
    return NVML_SUCCESS;
}

/* --- fabric, NVLink and peer-to-peer (NVSwitch systems, multi-GPU boxes) --------------------- */

/* A GPU with no "fabric" line is not NVSwitch-attached: NVML answers NOT_SUPPORTED. */
static nvmlReturn_t fabric_info(nvmlDevice_t d, unsigned int *status, unsigned char *state,
                                unsigned char *uuid, unsigned int *clique) {
    WHOLE_GPU(d);
    if (!d->gpu->has_fabric) return NVML_ERROR_NOT_SUPPORTED;
    memset(uuid, 0, NVML_GPU_FABRIC_UUID_LEN);
    *status = d->gpu->fabric_status;
    *state = (unsigned char)d->gpu->fabric_state;
    *clique = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, nvmlGpuFabricInfo_t *info) {
    unsigned char state;
    nvmlReturn_t rc;
    DEVICE_CALL("nvmlDeviceGetGpuFabricInfo", d, info);
    rc = fabric_info(d, (unsigned int *)&info->status, &state, info->clusterUuid,
                     &info->cliqueId);
    info->state = state;
    return rc;
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, nvmlGpuFabricInfoV_t *info) {
    nvmlGpuFabricInfo_v2_t *v2 = (nvmlGpuFabricInfo_v2_t *)info; /* v3 extends v2's layout */
    unsigned char state;
    nvmlReturn_t rc;
    DEVICE_CALL("nvmlDeviceGetGpuFabricInfoV", d, info);
    if (info->version != nvmlGpuFabricInfo_v2 && info->version != nvmlGpuFabricInfo_v3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    rc = fabric_info(d, (unsigned int *)&v2->status, &state, v2->clusterUuid, &v2->cliqueId);
    v2->state = state;
    v2->healthMask = 0;
    if (info->version == nvmlGpuFabricInfo_v3) info->healthSummary = 0;
    return rc;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link,
                                      nvmlEnableState_t *active) {
    DEVICE_CALL("nvmlDeviceGetNvLinkState", d, active);
    WHOLE_GPU(d);
    if (!d->gpu->nvlinks) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= d->gpu->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
    *active = (d->gpu->nvlink_active >> link) & 1 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuP2PCapsIndex_t index,
                                    nvmlGpuP2PStatus_t *status) {
    int known;
    DEVICE_CALL("nvmlDeviceGetP2PStatus", a, status);
    if (!valid(b)) return NVML_ERROR_INVALID_ARGUMENT;
    if (index > NVML_P2P_CAPS_INDEX_NVLINK) return NVML_ERROR_NOT_SUPPORTED;
    known = sim.p2p[a->index][b->index][index];
    if (!known) return NVML_ERROR_NOT_SUPPORTED;
    *status = (nvmlGpuP2PStatus_t)(known - 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
                                                 nvmlGpuTopologyLevel_t *level) {
    int known;
    DEVICE_CALL("nvmlDeviceGetTopologyCommonAncestor", a, level);
    if (!valid(b)) return NVML_ERROR_INVALID_ARGUMENT;
    known = sim.topo[a->index][b->index];
    if (!known) return NVML_ERROR_NOT_SUPPORTED;
    *level = (nvmlGpuTopologyLevel_t)(known - 1);
    return NVML_SUCCESS;
}
