"""Prototype (not wired in): costs of a rigorous AdaSSP release at 2e5 x 20, one thread (securescore report).

Float BLAS X^T X vs exact integer sums of rows rounded to 2^-22 (int64 matmul, or float blocks of 256 rows whose
partial sums stay below 2^52), eigvalsh vs an exact positive-definiteness verification of lambda_min +- delta
(two Fraction LDL^T), and Higham gamma_n inflations. Run: OMP_NUM_THREADS=1 python benchmarks/adassp_rounding_proto.py
"""
import time, math, numpy as np
from fractions import Fraction
rng=np.random.default_rng(0); n,d=200_000,20
X=rng.normal(size=(n,d)); X/=np.maximum(1,np.linalg.norm(X,axis=1))[:,None]
def best(f,r=5):
    t=[]
    for _ in range(r):
        s=time.process_time(); out=f(); t.append(time.process_time()-s)
    return min(t),out
# float BLAS (current)
tf,A=best(lambda: X.T@X)
# exact integer: rows rounded to h=2^-22, int64 products (n 2^44 < 2^63)
h=2.0**-22
def exact_int():
    Z=np.rint(X/h).astype(np.int64)
    return Z.T@Z
ti,Ai=best(exact_int,3)
# exact integer via float blocks: Z in float with |z|<=2^22 -> products <=2^44, block of 2^8 rows sums < 2^52 exact in any order
def exact_blocks(k=22, block=256):
    Zf=np.rint(X*2.0**k)
    acc=np.zeros((d,d),dtype=np.int64)
    for s in range(0,n,block):
        Zb=Zf[s:s+block]; acc+= (Zb.T@Zb).astype(np.int64)
    return acc
tb,Ab=best(exact_blocks,3)
assert np.array_equal(Ab,Ai)
# lambda_min: eigvalsh and exact PD verification (Sylvester, leading minors by Fraction LDL)
tl,lam=best(lambda: float(np.linalg.eigvalsh(A)[0]))
def is_pd(M, shift):
    # exact: all pivots of LDL^T (no pivoting) of M - shift I positive  <=> positive definite
    a=[[Fraction(float(M[i,j])) - (shift if i==j else 0) for j in range(d)] for i in range(d)]
    for k in range(d):
        p=a[k][k]
        if p<=0: return False
        for i in range(k+1,d):
            f=a[i][k]/p
            if f:
                ri, rk = a[i], a[k]
                for j in range(k+1,d): ri[j]-=f*rk[j]
    return True
X2=1.0; delta=Fraction(X2)*Fraction(1,2**20)
def verify():
    lo=Fraction(lam)-delta; hi=Fraction(lam)+delta
    return is_pd(A,lo) and not is_pd(A,hi)
tv,ok=best(verify,3)
u=2.0**-53; gam=n*u/(1-n*u)
print(f"BLAS X^T X: {tf*1e3:.1f} ms; exact int64 matmul: {ti*1e3:.0f} ms ({ti/tf:.0f}x); exact float-blocks->int: {tb*1e3:.0f} ms ({tb/tf:.1f}x)")
print(f"eigvalsh: {tl*1e3:.2f} ms; exact PD verification (2 Fraction LDL^T): {tv*1e3:.0f} ms, verified={ok}")
print(f"Higham inflation: vec(A) sqrt2*n*gamma_n={math.sqrt(2)*n*gam:.2e}; b n*gamma_n={n*gam:.2e}; lambda_min 2*n*gamma_n={2*n*gam:.2e} (+2*2^-20 for delta)")
print(f"exact-int grid inflation (h=2^-22, sqrt(d) h/ R): {math.sqrt(d)*h:.2e}")
