"""A failure reaches the user as one line in words: a Spark job's failure as the Python error
of its task or the Java exception's own message, never the JVM's trace."""

from __future__ import annotations

from spark_jobs.link_runner import one_line


def test_a_java_exception_is_its_message_without_its_class_error_class_or_trace():
    error = Exception(
        "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
        ": org.apache.spark.SparkIllegalArgumentException: [INVALID_DRIVER_MEMORY] System memory"
        " 1 must be at least 471859200.\n"
        'Please increase heap size using the --driver-memory option or "spark.driver.memory" '
        "in Spark configuration. SQLSTATE: F0000\n"
        "\tat org.apache.spark.memory.UnifiedMemoryManager$.getMaxMemory(UnifiedMemoryManager)\n"
    )
    assert one_line(error) == (
        "System memory 1 must be at least 471859200. Please increase heap size using the "
        '--driver-memory option or "spark.driver.memory" in Spark configuration.'
    )


def test_a_tasks_python_error_is_its_last_line_and_a_dead_worker_is_said_in_words():
    failed = Exception(
        "Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times\n"
        "Traceback (most recent call last):\n"
        '  File "slot.py", line 9, in run\n'
        "RuntimeError: failed 6 times in a row: Broker transport failure\n"
    )
    assert one_line(failed) == "RuntimeError: failed 6 times in a row: Broker transport failure"
    died = Exception("org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)")
    assert one_line(died) == "a copier slot's Python worker died (killed, or out of memory)"
    assert one_line(ValueError()) == "ValueError"
