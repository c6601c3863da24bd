/* Ed25519 signing speed, libsodium against OpenSSL 3.0
 * (docs/performance/log/2026-12-05-libsodium-signing.md). A measurement, not part of the build:
 *   gcc -O2 bench/ed25519-speed.c -o /tmp/ed25519-speed -lsodium -lcrypto && /tmp/ed25519-speed
 */
#include <sodium.h>
#include <stdio.h>
#include <time.h>
#include <openssl/evp.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  if(sodium_init()<0) return 1;
  unsigned char pk[32], sk[64], sig[64], msg[650]; randombytes_buf(msg,sizeof msg);
  crypto_sign_keypair(pk,sk);
  int n=20000; double t0=now();
  for(int i=0;i<n;i++){ msg[0]=i; crypto_sign_detached(sig,NULL,msg,sizeof msg,sk);}
  double t1=now(); printf("libsodium crypto_sign_detached: %.1f us\n",(t1-t0)/n*1e6);
  EVP_PKEY *k=NULL; EVP_PKEY_CTX *pc=EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519,NULL); EVP_PKEY_keygen_init(pc); EVP_PKEY_keygen(pc,&k);
  size_t sl=64; t0=now();
  for(int i=0;i<n;i++){ msg[0]=i; EVP_MD_CTX *c=EVP_MD_CTX_new(); EVP_DigestSignInit(c,NULL,NULL,NULL,k); sl=64; EVP_DigestSign(c,sig,&sl,msg,sizeof msg); EVP_MD_CTX_free(c);}
  t1=now(); printf("OpenSSL EVP_DigestSign (fresh ctx): %.1f us\n",(t1-t0)/n*1e6);
  EVP_MD_CTX *c=EVP_MD_CTX_new(); t0=now();
  for(int i=0;i<n;i++){ msg[0]=i; EVP_DigestSignInit(c,NULL,NULL,NULL,k); sl=64; EVP_DigestSign(c,sig,&sl,msg,sizeof msg);}
  t1=now(); printf("OpenSSL EVP_DigestSign (reused ctx): %.1f us\n",(t1-t0)/n*1e6);
  return 0;}
