# Time of the sparse product against the allowed (i,k,j) triples, with its least-squares line,
# from the file `bench_sparse --tsv FILE` writes (its last line: "# fit  intercept  slope  R^2").
#   gnuplot -e "data='sparse.tsv'; out='docs/img/sparse_time_vs_triples.png'" bench/sparse_plot.gp
set terminal pngcairo size 900,560 font ",11"
set output out
fit_line = system("grep '^# fit\t' " . data)
a = real(word(fit_line, 3))
b = real(word(fit_line, 4))
r2 = real(word(fit_line, 5))
set title sprintf("C(i,j) = A(i,k) B(k,j), n = 2000, maps i->k and i->j: time against allowed triples\n(random maps; fit over the per-key rows, R^2 = %.4f)", r2)
set xlabel "allowed (i,k,j) triples"
set ylabel "seconds"
set logscale xy
set format x "10^{%L}"
set grid
set key top left
# Columns: 9 the path (0 per-key products, 1 the dense GEMM the cost model chose), 10 the maps
# (0 random, 1 banded).
plot data using 2:($10 == 0 ? $5 : 1/0) with linespoints pt 7 lw 2 title "with maps, random (per-key; dense GEMM above 10%)", \
     data using 2:($10 == 1 ? $5 : 1/0) with linespoints pt 6 lw 2 title "with maps, banded (keys grouped)", \
     data using 2:($10 == 0 ? $4 : 1/0) with linespoints pt 5 lw 2 title "dense and masked (random)", \
     data using 2:($10 == 0 ? $3 : 1/0) with linespoints pt 9 lw 2 title "dense, no maps", \
     [x=1e5:3e9] a + b * x with lines dt 2 lw 2 lc rgb "black" title sprintf("fit: %.3g s + %.3g ns x triples", a, b * 1e9)
