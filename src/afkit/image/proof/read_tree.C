// afkit image validation: ROOT's interpreter (cling) opens a real ROOT file and reads a branch.
// root.exe -b -q -l '/.afkit/proof/read_tree.C("FILE_OR_URL", "TREE", "BRANCH")'
// The branch must hold one Int_t per entry (HZZ.root: events/NMuon). Prints one summary line.
#include <iostream>
#include <memory>

#include "TFile.h"
#include "TSystem.h"
#include "TTree.h"

void read_tree(const char *url = "/.afkit/proof/HZZ.root", const char *tree = "events", const char *branch = "NMuon")
{
   std::unique_ptr<TFile> file(TFile::Open(url));
   if (!file || file->IsZombie()) {
      std::cerr << "afkit-proof: cannot open " << url << std::endl;
      gSystem->Exit(1);
   }
   auto *t = file->Get<TTree>(tree);
   if (!t) {
      std::cerr << "afkit-proof: no tree " << tree << " in " << url << std::endl;
      gSystem->Exit(1);
   }
   Int_t value = 0;
   if (t->SetBranchAddress(branch, &value) < 0) {
      std::cerr << "afkit-proof: no Int_t branch " << branch << " in " << tree << std::endl;
      gSystem->Exit(1);
   }
   Long64_t sum = 0;
   const Long64_t entries = t->GetEntries();
   for (Long64_t i = 0; i < entries; ++i) {
      t->GetEntry(i);
      sum += value;
   }
   std::cout << "afkit-proof: " << tree << " " << entries << " entries, sum of " << branch << " " << sum << " ("
             << file->ClassName() << ")" << std::endl;
}
