/*
 * passhost-cmsis-nn Cortex-M test harness: vector table, reset handler and semihosting exit
 * for the QEMU boards of passhost_cmsis_nn.cortex_m (mps2-an385 / Cortex-M3, mps3-an547 /
 * Cortex-M55). Linked with --specs=rdimon.specs -nostartfiles: newlib's stdio writes through
 * semihosting, and this file replaces the C runtime's start-up code.
 *
 * Reset: enable the FP/MVE coprocessors where the build uses them, copy .data from its load
 * address, zero .bss, open the semihosting console, run main() and exit with its status.
 * Any other exception prints its number and exits with PHNN_CM_FAULT_STATUS.
 */
#include <stdint.h>
#include <stdlib.h>

/* The exit status after an unexpected exception: passhost_cmsis_nn.cortex_m.cross_compile
 * defines it (FAULT_EXIT_STATUS there). */
#ifndef PHNN_CM_FAULT_STATUS
#error "PHNN_CM_FAULT_STATUS must be defined (cross_compile passes -DPHNN_CM_FAULT_STATUS=...)"
#endif

#define SEMIHOST_SYS_WRITE0 0x04
#define SEMIHOST_SYS_EXIT_EXTENDED 0x20
#define ADP_STOPPED_APPLICATION_EXIT 0x20026
#define CPACR_ADDRESS 0xE000ED88u
#define CPACR_CP10_CP11_FULL_ACCESS (0xFu << 20)

/* Symbols of the linker script (sections.ld). */
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _stack_top;

/* newlib's rdimon: opens the semihosting handles behind stdin, stdout and stderr. */
extern void initialise_monitor_handles(void);
extern int main(void);

void phnn_cm_reset(void);
void phnn_cm_fault(void);
void _exit(int status);
void _init(void);
void _fini(void);

/* The start-up files' constructor and destructor hooks, which newlib's exit() refers to;
 * -nostartfiles leaves them out and this harness runs no constructors. (`used` keeps these
 * and _exit through link-time optimisation, which cannot see newlib's references.) */
__attribute__((used)) void _init(void)
{
}

__attribute__((used)) void _fini(void)
{
}

static int semihost_call(int operation, void *argument)
{
    register int r0 __asm__("r0") = operation;
    register void *r1 __asm__("r1") = argument;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

/* Ends the program: QEMU exits with status (SYS_EXIT_EXTENDED carries it whole). */
__attribute__((used)) void _exit(int status)
{
    uint32_t block[2];
    block[0] = ADP_STOPPED_APPLICATION_EXIT;
    block[1] = (uint32_t)status;
    semihost_call(SEMIHOST_SYS_EXIT_EXTENDED, block);
    for (;;) {
    }
}

void phnn_cm_fault(void)
{
    static char message[] = "cortex-m: unexpected exception 000\n";
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    ipsr &= 0x1FFu;
    message[31] = (char)('0' + ipsr / 100u);
    message[32] = (char)('0' + ipsr / 10u % 10u);
    message[33] = (char)('0' + ipsr % 10u);
    semihost_call(SEMIHOST_SYS_WRITE0, message);
    _exit(PHNN_CM_FAULT_STATUS);
}

/* Everything after the coprocessors are on, in its own function so that no FP or vector
 * instruction the compiler generates for it can run before that. */
__attribute__((noinline)) static void start(void)
{
    uint32_t *src = &_sidata;
    uint32_t *dst;
    for (dst = &_sdata; dst < &_edata;)
        *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;)
        *dst++ = 0;
    initialise_monitor_handles();
    exit(main());
}

void phnn_cm_reset(void)
{
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    *(volatile uint32_t *)CPACR_ADDRESS |= CPACR_CP10_CP11_FULL_ACCESS;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    start();
}

/* Armv7-M / Armv8-M system exceptions: initial stack pointer, reset, then 14 handlers. */
__attribute__((section(".vectors"), used)) static void (*const vector_table[16])(void) = {
    (void (*)(void))&_stack_top,
    phnn_cm_reset,
    phnn_cm_fault, phnn_cm_fault, phnn_cm_fault, phnn_cm_fault, phnn_cm_fault, phnn_cm_fault,
    phnn_cm_fault, phnn_cm_fault, phnn_cm_fault, phnn_cm_fault, phnn_cm_fault, phnn_cm_fault,
    phnn_cm_fault, phnn_cm_fault,
};
