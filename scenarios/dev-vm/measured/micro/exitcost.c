// Guest-side micro-costs: CPUID (always a VM exit handled in KVM), and a pipe ping-pong
// between two threads (wake-up incl. IPI and HLT exit when the target vCPU idles).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static inline void cpuid(uint32_t l){uint32_t a,b,c,d;__asm__ volatile("cpuid":"=a"(a),"=b"(b),"=c"(c),"=d"(d):"a"(l),"c"(0));}
static int p1[2],p2[2]; static int N=200000;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static int peer_cpu;
static void*peer(void*x){pin(peer_cpu);char b;for(int i=0;i<N;i++){read(p1[0],&b,1);write(p2[1],&b,1);}return 0;}
static double pingpong(int c0,int c1){pipe(p1);pipe(p2);peer_cpu=c1;pthread_t t;pthread_create(&t,0,peer,0);pin(c0);char b=0;
 double t0=now();for(int i=0;i<N;i++){write(p1[1],&b,1);read(p2[0],&b,1);}double t1=now();pthread_join(t,0);
 close(p1[0]);close(p1[1]);close(p2[0]);close(p2[1]);return (t1-t0)/N;}
int main(){
 for(int r=0;r<3;r++){int n=1000000;double t0=now();for(int i=0;i<n;i++)cpuid(0);double t1=now();printf("cpuid exit round trip: %.0f ns\n",(t1-t0)/n);}
 printf("pipe ping-pong same CPU: %.0f ns per round trip\n",pingpong(0,0));
 N=50000;
 printf("pipe ping-pong CPU0<->CPU1: %.0f ns per round trip\n",pingpong(0,1));
 printf("pipe ping-pong CPU0<->CPU1: %.0f ns per round trip\n",pingpong(0,1));
 return 0;}
