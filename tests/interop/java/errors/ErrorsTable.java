// Prints Kafka's error table as tab-separated rows (code, name, retriable, exception class,
// default message), read from org.apache.kafka.common.protocol.Errors of the kafka-clients jar on
// the classpath. Run by tests/kafka_schemas.py as `java -cp kafka-clients.jar ErrorsTable.java`.
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;

public class ErrorsTable {
    public static void main(String[] args) {
        StringBuilder out = new StringBuilder("code\tname\tretriable\texception_class\tdefault_message\n");
        for (Errors error : Errors.values()) {
            ApiException exception = error.exception();
            out.append(error.code()).append('\t').append(error.name()).append('\t')
               .append(exception instanceof RetriableException).append('\t')
               .append(exception == null ? "" : exception.getClass().getSimpleName()).append('\t')
               .append(exception == null ? "" : String.valueOf(error.message())).append('\n');
        }
        System.out.print(out);
    }
}
