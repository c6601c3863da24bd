module github.com/insightd/insightd/clients/go

go 1.19
