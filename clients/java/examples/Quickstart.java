import io.insightd.client.*;
import java.util.List;

/** The README's example: evaluate a payment, act on the verified decision, report consumption. */
public class Quickstart {
    public static void main(String[] args) throws InsightException {
        String url = System.getenv().getOrDefault("INSIGHTD_URL", "http://127.0.0.1:8080");
        InsightClient client = InsightClient.builder(url, System.getenv("INSIGHTD_API_KEY")).build();
        Evaluation evaluation = client.evaluate(EvaluationRequest.builder(OperationCategory.PAYMENT)
                .insight(EvaluationRequest.InsightRequest.isLikelyBeingCoached())
                .subject(new EvaluationRequest.Subject("cust-88121", "inst-5f2a", null))
                .build());
        System.out.println(evaluation.decision().action() + " " + evaluation.insights().get(0).value().orElseThrow()
                + " receipt of head " + evaluation.receipt().orElseThrow().sequence() + " verified");
        client.reportConsumption(evaluation.eventId(), ConsumptionStatus.USED_UNCHANGED_FRICTION, evaluation.insightIds());
        System.out.println("consumption reported");
    }
}
