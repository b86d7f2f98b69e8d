package org.sparkk8s.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Monte Carlo estimate of Pi on Spark, the JVM example of the README (Spark's own examples
 * jar is not in the local image): `JavaPi [partitions] [samples per partition]`. Each
 * partition seeds its generator with its number, as pi.py does, so every run prints the
 * same figure.
 */
public final class JavaPi {
  private JavaPi() {}

  public static void main(String[] args) {
    int partitions = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    int samples = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
    JavaSparkContext spark = new JavaSparkContext(new SparkConf().setAppName("JavaPi"));
    try {
      List<Integer> indices = new ArrayList<>(partitions);
      for (int index = 0; index < partitions; index++) {
        indices.add(index);
      }
      long hits =
          spark
              .parallelize(indices, partitions)
              .map(index -> countHits(index, samples))
              .reduce(Long::sum);
      long total = (long) partitions * samples;
      System.out.println("Pi is roughly " + 4.0 * hits / total);
      System.out.println(total + " samples in " + partitions + " partitions (JVM)");
    } finally {
      spark.stop();
    }
  }

  private static long countHits(int index, int samples) {
    SplittableRandom random = new SplittableRandom(index);
    long hits = 0;
    for (int sample = 0; sample < samples; sample++) {
      double x = random.nextDouble();
      double y = random.nextDouble();
      if (x * x + y * y <= 1.0) {
        hits++;
      }
    }
    return hits;
  }
}
