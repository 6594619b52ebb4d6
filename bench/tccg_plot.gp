# Bars per case of tenex, numpy.einsum (as returned and contiguous) and Eigen::Tensor, each
# as GEMM time / its time, from the data file bench/tccg_table.py writes.
#   gnuplot -e "data='t.dat'; out='t.png'; label='title'" bench/tccg_plot.gp
set terminal pngcairo size 1400,520 font ",10"
set output out
set title label noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top left horizontal
set ylabel "GEMM time / time (1 = one GEMM of the same m, n, k)"
set yrange [0:*]
set grid ytics
set xtics rotate by -60 font ",8" nomirror
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 lw 1.5 lc rgb "black"
plot data using 2:xtic(1) title "tenex" lc rgb "#1f77b4", \
     "" using 3 title "numpy.einsum" lc rgb "#ff7f0e", \
     "" using 4 title "numpy, contiguous" lc rgb "#ffbb78", \
     "" using 5 title "Eigen::Tensor" lc rgb "#2ca02c"
