"""spark-submit's command line: its arguments parsed and checked as SparkSubmitArguments does,
SPARK_SUBMIT_OPTS, --packages, local globs, the master URL, a jar's Main-Class."""
