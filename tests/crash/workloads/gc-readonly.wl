# 16 files deleted from the 'full' setup, then 60 rounds of: a 700 KB file written
# and fsynced, the one before deleted, 16 xattrs of 4 KB (the journal grows
# to 8 MiB before it rolls). Reclaim thrashes and the journal runs out of zones.
unlink f01
unlink f03
unlink f05
unlink f07
unlink f09
unlink f11
unlink f13
unlink f15
unlink f17
unlink f19
unlink f21
unlink f23
unlink f25
unlink f27
unlink f29
unlink f31
fsyncdir .
create g00
write g00 0 700000
fsync g00
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g01
write g01 0 700000
fsync g01
unlink g00
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g02
write g02 0 700000
fsync g02
unlink g01
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g03
write g03 0 700000
fsync g03
unlink g02
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g04
write g04 0 700000
fsync g04
unlink g03
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g05
write g05 0 700000
fsync g05
unlink g04
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g06
write g06 0 700000
fsync g06
unlink g05
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g07
write g07 0 700000
fsync g07
unlink g06
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g08
write g08 0 700000
fsync g08
unlink g07
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g09
write g09 0 700000
fsync g09
unlink g08
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g10
write g10 0 700000
fsync g10
unlink g09
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g11
write g11 0 700000
fsync g11
unlink g10
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g12
write g12 0 700000
fsync g12
unlink g11
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g13
write g13 0 700000
fsync g13
unlink g12
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g14
write g14 0 700000
fsync g14
unlink g13
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g15
write g15 0 700000
fsync g15
unlink g14
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g16
write g16 0 700000
fsync g16
unlink g15
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g17
write g17 0 700000
fsync g17
unlink g16
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g18
write g18 0 700000
fsync g18
unlink g17
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g19
write g19 0 700000
fsync g19
unlink g18
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g20
write g20 0 700000
fsync g20
unlink g19
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g21
write g21 0 700000
fsync g21
unlink g20
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g22
write g22 0 700000
fsync g22
unlink g21
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g23
write g23 0 700000
fsync g23
unlink g22
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g24
write g24 0 700000
fsync g24
unlink g23
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g25
write g25 0 700000
fsync g25
unlink g24
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g26
write g26 0 700000
fsync g26
unlink g25
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g27
write g27 0 700000
fsync g27
unlink g26
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g28
write g28 0 700000
fsync g28
unlink g27
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g29
write g29 0 700000
fsync g29
unlink g28
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g30
write g30 0 700000
fsync g30
unlink g29
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g31
write g31 0 700000
fsync g31
unlink g30
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g32
write g32 0 700000
fsync g32
unlink g31
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g33
write g33 0 700000
fsync g33
unlink g32
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g34
write g34 0 700000
fsync g34
unlink g33
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g35
write g35 0 700000
fsync g35
unlink g34
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g36
write g36 0 700000
fsync g36
unlink g35
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g37
write g37 0 700000
fsync g37
unlink g36
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g38
write g38 0 700000
fsync g38
unlink g37
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g39
write g39 0 700000
fsync g39
unlink g38
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g40
write g40 0 700000
fsync g40
unlink g39
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g41
write g41 0 700000
fsync g41
unlink g40
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g42
write g42 0 700000
fsync g42
unlink g41
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g43
write g43 0 700000
fsync g43
unlink g42
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g44
write g44 0 700000
fsync g44
unlink g43
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g45
write g45 0 700000
fsync g45
unlink g44
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g46
write g46 0 700000
fsync g46
unlink g45
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g47
write g47 0 700000
fsync g47
unlink g46
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g48
write g48 0 700000
fsync g48
unlink g47
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g49
write g49 0 700000
fsync g49
unlink g48
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g50
write g50 0 700000
fsync g50
unlink g49
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g51
write g51 0 700000
fsync g51
unlink g50
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g52
write g52 0 700000
fsync g52
unlink g51
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g53
write g53 0 700000
fsync g53
unlink g52
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g54
write g54 0 700000
fsync g54
unlink g53
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g55
write g55 0 700000
fsync g55
unlink g54
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g56
write g56 0 700000
fsync g56
unlink g55
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g57
write g57 0 700000
fsync g57
unlink g56
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g58
write g58 0 700000
fsync g58
unlink g57
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
create g59
write g59 0 700000
fsync g59
unlink g58
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
setxattr f00 user.r0 4000
setxattr f00 user.r1 4000
setxattr f00 user.r2 4000
setxattr f00 user.r3 4000
setxattr f00 user.r4 4000
setxattr f00 user.r5 4000
setxattr f00 user.r6 4000
setxattr f00 user.r7 4000
fsyncdir .
