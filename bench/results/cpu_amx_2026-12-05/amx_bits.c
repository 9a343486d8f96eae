// How AMX's tdpbf16ps rounds against vdpbf16ps and plain f32 sums (thirty-fifth session, 2-core Sapphire Rapids):
// the experiment behind README's "Intel AMX tiles" section. Two programs in one file, chosen by -DEMULATE.
//   gcc -O2 -mamx-tile -mamx-bf16 -mavx512f -mavx512bf16 amx_bits.c -o amx_bits && ./amx_bits
//     -> "diff 288805 of 320000": outputs whose bits differ between the tiles and vdpbf16ps's panel kernel
//   gcc -O2 -mamx-tile -mamx-bf16 -mavx512f -DEMULATE amx_bits.c -o amx_emu && ./amx_emu
//     -> "A 72225 B 72165 C 70624 D 51566 of 80000": outputs that differ from (A) (c + p0) + p1, (B) (c + p1) + p0,
//        (C) c + (p0 + p1) in f32, (D) each 32-input block summed exactly (double) then added in f32
#ifndef EMULATE
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
struct cfg { uint8_t palette, start; uint8_t r[14]; uint16_t colsb[16]; uint8_t rows[16]; } __attribute__((aligned(64)));
static uint16_t rbf(void){ float f = ((rand()/(float)RAND_MAX)-0.5f) * (float)(1<<(rand()%12)) / 64.f; uint32_t u; memcpy(&u,&f,4); return u>>16; }
int main(){
  syscall(SYS_arch_prctl, 0x1023, 18);
  struct cfg c; memset(&c,0,sizeof c); c.palette=1;
  c.rows[0]=1; c.colsb[0]=64; c.rows[1]=1; c.colsb[1]=64; c.rows[2]=16; c.colsb[2]=64;
  _tile_loadconfig(&c);
  enum{K=384, PAIRS=K/2};
  static uint16_t x[K]; static uint16_t panel[PAIRS*32]; float ca[16], cb[16];
  long diff=0, tot=0;
  for(int trial=0; trial<20000; trial++){
    for(int i=0;i<K;i++) x[i]=rbf();
    for(int i=0;i<PAIRS*32;i++) panel[i]=rbf();
    // vdpbf16ps panel style: acc(16 lanes) += panel slot j (32 bf16) . broadcast pair j
    __m512 acc=_mm512_setzero_ps();
    for(int j=0;j<PAIRS;j++){ int32_t pr; memcpy(&pr,x+2*j,4); acc=_mm512_dpbf16_ps(acc,(__m512bh)_mm512_loadu_si512(panel+j*32),(__m512bh)_mm512_set1_epi32(pr)); }
    _mm512_storeu_ps(ca,acc);
    _tile_zero(0);
    for(int j=0;j<PAIRS;j+=16){ _tile_loadd(1,x+2*j,64); _tile_loadd(2,panel+j*32,64); _tile_dpbf16ps(0,1,2); }
    _tile_stored(0,cb,64);
    for(int l=0;l<16;l++){ tot++; if(memcmp(ca+l,cb+l,4)) diff++; }
  }
  printf("diff %ld of %ld\n",diff,tot);
}
#else
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <sys/syscall.h>
#include <unistd.h>
struct cfg { uint8_t palette, start; uint8_t r[14]; uint16_t colsb[16]; uint8_t rows[16]; } __attribute__((aligned(64)));
static uint16_t rbf(void){ float f = ((rand()/(float)RAND_MAX)-0.5f) * (float)(1<<(rand()%12)) / 64.f; uint32_t u; memcpy(&u,&f,4); return u>>16; }
static float f(uint16_t h){ uint32_t u=(uint32_t)h<<16; float r; memcpy(&r,&u,4); return r; }
int main(){
  syscall(SYS_arch_prctl, 0x1023, 18);
  struct cfg c; memset(&c,0,sizeof c); c.palette=1;
  c.rows[0]=1; c.colsb[0]=64; c.rows[1]=1; c.colsb[1]=64; c.rows[2]=16; c.colsb[2]=64;
  _tile_loadconfig(&c);
  enum{K=384, PAIRS=K/2};
  static uint16_t x[K]; static uint16_t panel[PAIRS*32]; float cb[16];
  long dA=0,dB=0,dC=0,dD=0,tot=0;
  for(int trial=0; trial<5000; trial++){
    for(int i=0;i<K;i++) x[i]=rbf();
    for(int i=0;i<PAIRS*32;i++) panel[i]=rbf();
    _tile_zero(0);
    for(int j=0;j<PAIRS;j+=16){ _tile_loadd(1,x+2*j,64); _tile_loadd(2,panel+j*32,64); _tile_dpbf16ps(0,1,2); }
    _tile_stored(0,cb,64);
    for(int l=0;l<16;l++){
      volatile float a=0,b=0,cc=0; double dd=0; float d2=0;
      for(int j=0;j<PAIRS;j++){
        float p0=f(x[2*j])*f(panel[j*32+2*l]), p1=f(x[2*j+1])*f(panel[j*32+2*l+1]);
        a = (a + p0) + p1; b = (b + p1) + p0; cc = cc + (p0 + p1);
      }
      // D: per 16-pair block, sum block in double? then add
      for(int j0=0;j0<PAIRS;j0+=16){ double s=0; for(int j=j0;j<j0+16;j++){ s+= (double)f(x[2*j])*f(panel[j*32+2*l]) + (double)f(x[2*j+1])*f(panel[j*32+2*l+1]);} d2 = d2 + (float)s; }
      tot++; dA += a!=cb[l]; dB += b!=cb[l]; dC += cc!=cb[l]; dD += d2!=cb[l];
    }
  }
  printf("A %ld B %ld C %ld D %ld of %ld\n",dA,dB,dC,dD,tot);
}
#endif
