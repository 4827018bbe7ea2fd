// Cross-vCPU wake-up with the target vCPU idle (HLT) vs kept busy by a spinner thread
// at lower priority (no HLT): isolates the halted-vCPU wake path.
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int p1[2],p2[2]; static int N=30000; static volatile int stop;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static void*peer(void*x){pin(1);char b;for(int i=0;i<N;i++){read(p1[0],&b,1);write(p2[1],&b,1);}return 0;}
static void*spin(void*x){pin(1);setpriority(PRIO_PROCESS,0,19);while(!stop);return 0;}
static double run(void){pipe(p1);pipe(p2);pthread_t t;pthread_create(&t,0,peer,0);pin(0);char b=0;
 double t0=now();for(int i=0;i<N;i++){write(p1[1],&b,1);read(p2[0],&b,1);}double t1=now();pthread_join(t,0);return (t1-t0)/N;}
int main(int c,char**v){pthread_t s; if(c>1){pthread_create(&s,0,spin,0);}
 printf("%s: %.0f ns per round trip\n", c>1?"CPU1 kept busy":"CPU1 idle", run()); stop=1; return 0;}
