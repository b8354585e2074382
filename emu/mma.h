/* mma.h - private to emu/: the warp-collective tensor-core operations of
 * the emulator (mma.sync, ldmatrix) on PTX registers, written from the PTX
 * ISA's fragment tables. Each works on all 32 lanes of a warp at once:
 * regs[lane][i] is the i-th 32-bit register operand of that lane, in the
 * order the LLVM intrinsic takes them (A's, then B's, then C's); f16 and
 * bf16 pairs hold the lower-indexed element in the low 16 bits, s8
 * quadruples the lowest in the low byte, tf32 an f32 bit pattern whose low
 * 13 bits are ignored. */
#ifndef TILEC_EMU_MMA_H
#define TILEC_EMU_MMA_H

#include <stdbool.h>
#include <stdint.h>

enum { EMU_MMA_MAX_REGS = 16, EMU_MMA_LANES = 32 };

/* The kind for an intrinsic name (llvm.nvvm.mma.m16n8k16.row.col.f32.f32,
 * ...), or -1. */
int emu_mma_kind(const char *name);
unsigned emu_mma_nargs(int kind);
/* D = A * B + C for the warp: out[lane][0..4) are the lane's four D
 * registers (f32 bits, or s32). Products are exact and each output's sum
 * is rounded once to f32 (s32 wraps, or saturates for .satfinite). */
void emu_mma_compute(int kind, const uint32_t regs[EMU_MMA_LANES][EMU_MMA_MAX_REGS], uint32_t out[EMU_MMA_LANES][4]);

/* ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].b16: the kind for an
 * intrinsic name or -1, its matrix count, whether it transposes. */
int emu_ldmatrix_kind(const char *name);
unsigned emu_ldmatrix_count(int kind);
bool emu_ldmatrix_trans(int kind);
/* rows[lane]: the 16 bytes of the row lane addresses (lanes 8*i..8*i+7
 * give matrix i's rows; NULL for lanes that give none); out[lane][i] is
 * the lane's register of matrix i. */
void emu_ldmatrix_compute(int kind, const uint8_t *const rows[EMU_MMA_LANES], uint32_t out[EMU_MMA_LANES][4]);

/* f32 to tf32 as cvt.rna.tf32.f32: to nearest, ties away from zero, the
 * low 13 bits zero. */
uint32_t emu_f2tf32_rna(uint32_t f32_bits);

#endif
