// The README's example: evaluate a payment, act on the verified decision, report consumption.
// INSIGHTD_API_KEY is a sandbox key with the evaluate role; INSIGHTD_URL defaults to make run's.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	insight "github.com/insightd/insightd/clients/go"
)

func main() {
	url := os.Getenv("INSIGHTD_URL")
	if url == "" {
		url = "http://127.0.0.1:8080"
	}
	ctx := context.Background()
	client, err := insight.New(insight.Options{BaseURL: url, APIKey: os.Getenv("INSIGHTD_API_KEY")})
	if err != nil {
		log.Fatal(err)
	}
	ev, err := client.Evaluate(ctx, insight.EvaluationRequest{
		OperationCategory: insight.CategoryPayment,
		Insights:          []insight.InsightRequest{insight.IsLikelyBeingCoached()},
		Subject:           &insight.Subject{Account: "cust-88121", Device: "inst-5f2a"},
	})
	if err != nil {
		log.Fatal(err) // fail open: your usual controls
	}
	fmt.Println(ev.Decision.Action, ev.Insight(insight.InsightTypeIsLikelyBeingCoached).Outcome.Value, "receipt of head", ev.Receipt.Sequence, "verified")
	err = client.ReportConsumption(ctx, ev.EventID, insight.ConsumptionReport{Status: insight.UsedUnchangedFriction, InsightIDsUsed: ev.InsightIDs()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("consumption reported")
}
