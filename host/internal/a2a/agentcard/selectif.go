package agentcard

import a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

// SelectInterface returns the first interface of card, in the card's order
// of preference, whose protocol binding and protocol version equal binding
// and version (spec 000's selectInterface); nil when none matches.
func SelectInterface(card *a2av1.AgentCard, binding, version string) *a2av1.AgentInterface {
	if card == nil {
		return nil
	}
	for _, iface := range card.SupportedInterfaces {
		if iface != nil && string(iface.ProtocolBinding) == binding && string(iface.ProtocolVersion) == version {
			return iface
		}
	}
	return nil
}
