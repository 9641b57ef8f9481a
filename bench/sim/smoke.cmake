# smoke.cmake - ctest driver of bench.sim.smoke: run `pmc-sim --quick` on DAG
# and pass when it exits 0 and printed its table (header and one row) and its
# closing line.  Usage: cmake -DSIM=pmc-sim -DDAG=file.dag -P smoke.cmake
execute_process(COMMAND ${SIM} --quick --dag ${DAG}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 100)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pmc-sim --quick exited with ${rc}")
endif()
if(NOT out MATCHES "us/task" OR NOT out MATCHES "\n +100 +6400 " OR
   NOT out MATCHES "1 of 1 simulations succeeded")
  message(FATAL_ERROR "pmc-sim --quick did not print its table")
endif()
